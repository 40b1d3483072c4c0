"""Functional cover model of l2reg (points in verif/lanewise_cov.py; plan in testplan.yaml)."""
from verif.lanewise_cov import model

COV = model("l2reg")

"""Functional cover model of dot_sigmoid (points in verif/lanewise_cov.py; plan in testplan.yaml)."""
from verif.lanewise_cov import model

COV = model("dot_sigmoid")

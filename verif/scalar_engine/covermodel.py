"""Functional cover model of scalar_engine (points in verif/lanewise_cov.py; plan in testplan.yaml)."""
from verif.lanewise_cov import model

COV = model("scalar_engine")

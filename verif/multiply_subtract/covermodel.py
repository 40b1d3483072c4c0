"""Functional cover model of multiply_subtract (points in verif/lanewise_cov.py; plan in testplan.yaml)."""
from verif.lanewise_cov import model

COV = model("multiply_subtract")

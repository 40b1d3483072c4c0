"""Functional cover model of sigmoid_delta (points in verif/lanewise_cov.py; plan in testplan.yaml)."""
from verif.lanewise_cov import model

COV = model("sigmoid_delta")

"""Functional coverage model of fpdeep_node (testplan: verif/fpdeep_node/testplan.yaml);
declared and sampled by verif/fpdeep_node_cov.py (NodeTB hooks)."""
from verif.fpdeep_node_cov import node_model

COV = node_model("fpdeep_node", True, "")

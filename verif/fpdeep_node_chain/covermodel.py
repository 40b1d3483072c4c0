"""Functional coverage model of fpdeep_node_chain (testplan: verif/fpdeep_node_chain/testplan.yaml):
the fpdeep_node points on node 0 of the chain (its status pins, its per-node streams, the
chain's act output and error input); declared and sampled by verif/fpdeep_node_cov.py."""
from verif.fpdeep_node_cov import node_model

COV = node_model("fpdeep_node_chain", False, "n0_")

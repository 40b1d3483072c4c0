"""MAPLE smart memory (MAPLE section 4.1, Fig. 4(B))."""

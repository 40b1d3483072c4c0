"""MyHDL generators for every core in ``ip/``.

``python -m rtl_gen gen|check|lint|list`` drives them; see ``rtl_gen/registry.py``.
"""

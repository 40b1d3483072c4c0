"""Bit-true NumPy golden models for the accelerator IP in this repository.

Every algorithm exists twice with one API: a float64 reference and a bit-true
fixed-point model that the RTL is compared against bit for bit.  Nothing in
this package imports HDL tooling.
"""

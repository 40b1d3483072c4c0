"""Reusable verification components, built on cocotb-bus (Driver, Monitor, Scoreboard).

* :mod:`scoreboards.gates`  -- seeded random bubble / backpressure generators
* :mod:`scoreboards.axis`   -- AXI4-Stream source driver, sink (tready driver), monitor
* :mod:`scoreboards.checker` -- bit-exact fixed-point scoreboard that drains
"""

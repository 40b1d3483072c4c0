"""Reusable verification components, built on cocotb-bus (Driver, Monitor, Scoreboard).

* :mod:`scoreboards.gates`  -- seeded random bubble / backpressure generators
* :mod:`scoreboards.axis`   -- AXI4-Stream source driver, sink (tready driver), monitor
* :mod:`scoreboards.checker` -- bit-exact fixed-point scoreboard that drains
* :mod:`scoreboards.protocol` -- AXI4-Stream / AXI4 master / AXI4-Lite slave protocol checkers,
  attached to every bus port of every testbench by ``guard_tests(globals())``
"""

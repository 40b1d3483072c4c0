"""tablac -- a compiler from the TABLA language (with CoSMIC's extensions) to a
dataflow graph (front end: parser, sema, dfg, interp) and on to CoSMIC PE microcode and
memory schedules (back end: plan, mapper, schedule, codegen, machine).

The contract between the two halves is /tmp/team/tablac_contract.md (summarised in the
README's tablac section) and the docstring of tablac/dfg.py.
"""
from .errors import CompileError

__all__ = ["CompileError"]

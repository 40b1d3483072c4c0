"""tablac -- a compiler from the TABLA language (with CoSMIC's extensions) to a
dataflow graph (front end: parser, sema, dfg, interp) and on to CoSMIC PE microcode and
memory schedules (back end: plan, mapper, schedule, codegen, machine).

The contract between the two halves is /tmp/team/tablac_contract.md (summarised in the
README's tablac section) and the docstring of tablac/dfg.py.
"""
from .errors import CompileError

__all__ = ["CompileError", "compile", "load", "program_path", "PROGRAMS"]


def compile(text: str, *, file: str = "<input>", overrides: dict | None = None,
            nonlinear=None, dot_group: int | None = None, max_nodes: int | None = None):
    """TABLA source -> :class:`tablac.dfg.Graph`.

    ``overrides`` replaces constants by name (``{"m": 8}``; ``mu``/``batch`` replace the
    learning rate / mini-batch size), ``nonlinear`` is the set of nonlinear functions the
    target PE provides (default all: sigmoid, gaussian, log, recip), ``dot_group`` the
    dot lowering group size (None = one dot per sum), ``max_nodes`` a guard on the DFG
    size (default dfg.MAX_NODES).  Raises only CompileError."""
    from . import dfg, parser, sema
    mod = parser.parse(text, file)
    prog = sema.check(mod, overrides, sema.NONLINEAR if nonlinear is None else nonlinear)
    return dfg.build_dfg(prog, dot_group, dfg.MAX_NODES if max_nodes is None else max_nodes)


def load(path, **kw):
    """:func:`compile` the program file ``path`` (errors name the file)."""
    from pathlib import Path
    p = Path(path)
    try:
        text = p.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise CompileError(f"cannot read program: {e}", str(path)) from None
    return compile(text, file=str(path), **kw)


PROGRAMS = {"linear": "linear.t", "logistic": "logistic.t", "svm": "svm.t",
            "reco": "reco.t", "backprop": "backprop.t"}


def program_path(name: str):
    """Path of a shipped benchmark program (``linear``, ``logistic``, ``svm``, ``reco``,
    ``backprop``)."""
    from pathlib import Path
    return Path(__file__).with_name("programs") / PROGRAMS[name]

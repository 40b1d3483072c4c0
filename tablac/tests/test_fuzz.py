"""Fuzzing the front end with hypothesis: random token streams and mutated versions of
the five benchmark programs must either compile or raise CompileError -- never any other
exception.  Kept to a few seconds in the default profile."""
import os
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tablac
from tablac import CompileError, dfg

TOKENS = ["model_input", "model_output", "model", "gradient", "iterator", "learning_rate",
          "mini_batch", "sum", "pi", "norm", "sigmoid", "gaussian", "log", "recip", "min",
          "max", "x", "y", "w", "g", "i", "j", "m", "n", "d", "t", "0", "1", "2", "3", "0.5",
          "55", "1e3", "-1", "=", ";", ",", ":", "[", "]", "(", ")", "+", "-", "*", "/", "<",
          ">", "->", "//", "\n", "$", "'", ".", "1e400"]
# the programs with their size constants cut to <= 4 (mutations stay fast to compile)
SOURCES = {name: re.sub(r"(?m)^(\w+ = )(\d+);", lambda mt: f"{mt[1]}{min(int(mt[2]), 4)};",
                        tablac.program_path(name).read_text())
           for name in tablac.PROGRAMS}
FUZZ = settings(max_examples=int(os.environ.get("TABLAC_FUZZ_EXAMPLES", 150)), deadline=None, suppress_health_check=list(HealthCheck))
# keep mutated programs small: the guard turns a huge DFG into a CompileError
MAX_NODES = 20000


def compile_or_error(text):
    try:
        g = tablac.compile(text, file="fuzz.t", max_nodes=MAX_NODES)
    except CompileError as e:
        assert e.file == "fuzz.t" and isinstance(e.line, int) and isinstance(e.col, int)
        assert str(e).startswith(f"fuzz.t:{e.line}:{e.col}: error: ")
        return None
    for n in g.nodes:
        assert n.op in dfg.OPS and all(0 <= a < n.id for a in n.args)
    return g


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=40))
def test_random_token_streams(tokens):
    compile_or_error(" ".join(tokens))


def _lexemes(text):
    return re.findall(r"//[^\n]*|[A-Za-z_][A-Za-z0-9_']*|\d+\.?\d*(?:[eE][-+]?\d+)?|->|\S|\n", text)


@st.composite
def mutated(draw):
    name = draw(st.sampled_from(sorted(SOURCES)))
    lex = _lexemes(SOURCES[name])
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["delete", "insert", "replace", "duplicate", "number"]))
        k = draw(st.integers(0, max(0, len(lex) - 1)))
        if kind == "delete" and lex:
            del lex[k:k + draw(st.integers(1, 3))]
        elif kind == "insert":
            lex.insert(k, draw(st.sampled_from(TOKENS)))
        elif kind == "replace" and lex:
            lex[k] = draw(st.sampled_from(TOKENS))
        elif kind == "duplicate" and lex:
            j = draw(st.integers(k, min(len(lex), k + 12)))
            lex[k:k] = lex[k:j]
        elif kind == "number":
            nums = [i for i, t in enumerate(lex) if re.fullmatch(r"\d+\.?\d*", t)]
            if nums:
                lex[draw(st.sampled_from(nums))] = draw(st.sampled_from(
                    ["0", "1", "2", "7", "0.5", "-3", "64", "1e9", "2.5", "1e-30"]))
    return " ".join(lex)


@FUZZ
@given(mutated())
def test_mutated_programs(text):
    compile_or_error(text)


def test_unmutated_programs_compile():
    for name, text in SOURCES.items():
        assert compile_or_error(" ".join(_lexemes(text))) is not None, name


@FUZZ
@given(st.text(alphabet=st.sampled_from(list("mwxyigd[]():;,=+-*/<>.0123456789 \n_'$é\t")),
               max_size=60))
def test_random_characters(text):
    compile_or_error(text)

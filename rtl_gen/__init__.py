"""MyHDL generators for every core in ``ip/``.

``python -m rtl_gen gen|check|lint|list`` drives them; see ``rtl_gen/registry.py``.

``__version__`` is the one version number of the library: every generated core's
FuseSoC VLNV (``mlaccel:<family>:<core>:<version>``, :func:`library_version`) and
``pyproject.toml`` (``dynamic = ["version"]``) take it from here;
``rtl_gen/tests/test_version_license.py`` checks that the committed ``.core`` files
(also the hand-written ``ip/rtl_gen/rtl_gen.core``), the README catalog and
CHANGELOG.md agree.  To bump: change it here and in ``ip/rtl_gen/rtl_gen.core`` and the
README catalog, move CHANGELOG.md's *Unreleased* entries under the new number, run
``make gen``.
"""

__version__ = "1.0.0"

LICENSE_SPDX = "Apache-2.0"
# Name the licence in every generated file's header (Verilog, VHDL, .core, datasheet,
# Yosys/Vivado scripts).  Switching it changes every generated file's header, so
# `make check-gen` then wants `make gen`.
LICENSE_IN_GENERATED_FILES = True


def library_version() -> str:
    """The library version (read at call time, so a bump is seen without re-imports)."""
    import rtl_gen
    return rtl_gen.__version__


def license_notice() -> list[str]:
    """Header lines naming the licence of generated files (without comment markers);
    empty while :data:`LICENSE_IN_GENERATED_FILES` is off."""
    import rtl_gen
    if not rtl_gen.LICENSE_IN_GENERATED_FILES:
        return []
    return [f"SPDX-License-Identifier: {rtl_gen.LICENSE_SPDX}"]


def license_sentence() -> str | None:
    """The datasheets' licence line (None while :data:`LICENSE_IN_GENERATED_FILES` is off)."""
    import rtl_gen
    if not rtl_gen.LICENSE_IN_GENERATED_FILES:
        return None
    return (f"License: {rtl_gen.LICENSE_SPDX} (SPDX), the `LICENSE` file of the mlaccel-ip "
            "repository; the netlists are generated from its Apache-2.0 sources.")

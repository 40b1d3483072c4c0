"""One library version (rtl_gen.__version__) and the licence: every committed .core's
VLNV, the README catalog, pyproject.toml and CHANGELOG.md agree with it; a bump is seen
by the generator at once (so `make check-gen` would ask for `make gen`); LICENSE is the
Apache-2.0 text; the prepared licence line of generated headers is off in the committed
ip/ and on when switched."""
from __future__ import annotations

import hashlib
import re
import tomllib

import pytest

import rtl_gen
from rtl_gen.common import core as core_mod
from rtl_gen.common import hdl
from rtl_gen.common.core import IP_DIR, REPO
from rtl_gen.registry import cores, get

# sha256 of the Apache License 2.0 text as published by the ASF (apache.org/licenses/LICENSE-2.0.txt)
APACHE_2_SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"


def _core_names():
    return {p.parent.name: re.search(r"^name: (\S+)$", p.read_text(), re.M).group(1)
            for p in sorted(IP_DIR.glob("*/*.core"))}


def test_version_is_semver():
    assert re.fullmatch(r"\d+\.\d+\.\d+", rtl_gen.__version__), rtl_gen.__version__
    assert rtl_gen.library_version() == rtl_gen.__version__


def test_every_committed_core_carries_the_library_version():
    names = _core_names()
    assert "rtl_gen" in names and len(names) >= 20
    wrong = {d: n for d, n in names.items() if n.rsplit(":", 1)[1] != rtl_gen.__version__}
    assert not wrong, f"VLNV version != rtl_gen.__version__ {rtl_gen.__version__}: {wrong}"
    for name in cores():
        assert get(name).version == rtl_gen.__version__


def test_readme_catalog_pyproject_and_changelog_agree():
    readme = (REPO / "README.md").read_text()
    vlnvs = re.findall(r"`(mlaccel:[a-z_]+:[a-z0-9_]+:[0-9.]+)`", readme)
    assert vlnvs and all(v.endswith(":" + rtl_gen.__version__) for v in vlnvs), vlnvs
    py = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "version" not in py["project"] and "version" in py["project"]["dynamic"]
    assert py["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "rtl_gen.__version__"}
    log = (REPO / "CHANGELOG.md").read_text()
    assert "## [Unreleased]" in log and f"## [{rtl_gen.__version__}]" in log


def test_a_version_bump_reaches_the_generated_core(monkeypatch):
    """Negative for the check above: with another version the generator's .core differs
    from the committed one (what `make check-gen` reports until `make gen`)."""
    cd = get("l2reg")
    params = cd.resolve(cd.configs["default"])
    committed = (IP_DIR / "l2reg" / "l2reg.core").read_text()
    assert core_mod.core_file(cd, params) == committed
    monkeypatch.setattr(rtl_gen, "__version__", "9.8.7")
    bumped = core_mod.CoreDef(**{k: getattr(cd, k) for k in ("name", "family", "description", "params",
                                                              "build", "datasheet", "configs", "generator")})
    assert bumped.vlnv().endswith(":9.8.7")
    text = core_mod.core_file(bumped, params)
    assert text != committed and "name: mlaccel:pipearch:l2reg:9.8.7" in text


def test_license_file_is_apache_2():
    text = (REPO / "LICENSE").read_bytes()
    assert hashlib.sha256(text).hexdigest() == APACHE_2_SHA256
    assert rtl_gen.LICENSE_SPDX == "Apache-2.0"


def test_committed_ip_follows_the_license_flag():
    """ip/ carries the licence line exactly when rtl_gen.LICENSE_IN_GENERATED_FILES is on
    (the lead switches it on and regenerates ip/ in one go)."""
    spdx = "SPDX-License-Identifier: Apache-2.0"
    for f in (IP_DIR / "l2reg" / "rtl" / "l2reg.v", IP_DIR / "l2reg" / "l2reg.core"):
        assert (spdx in f.read_text()) is rtl_gen.LICENSE_IN_GENERATED_FILES, f


@pytest.mark.parametrize("on", [False, True])
def test_license_line_in_generated_headers(monkeypatch, on):
    monkeypatch.setattr(rtl_gen, "LICENSE_IN_GENERATED_FILES", on)
    v_hdr = hdl._header("//", "rtl_gen/x.py", {"W": 8})
    cd = get("l2reg")
    params = cd.resolve(cd.configs["default"])
    core = core_mod.core_file(cd, params)
    ys = core_mod.yosys_script(cd)
    tcl = core_mod.vivado_ooc_tcl("l2reg")
    spdx = "SPDX-License-Identifier: Apache-2.0"
    for text, marker in ((v_hdr, "// "), (core, "# "), (ys, "# "), (tcl, "# ")):
        assert (f"{marker}{spdx}\n" in text) is on, text[:300]

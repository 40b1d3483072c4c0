"""Figures written by the regression (``make sim``) from data the tests leave behind.

A test that wants a figure writes ``build/plots/<name>.json``::

    {"title": ..., "xlabel": ..., "ylabel": ..., "series": {"label": [y0, y1, ...], ...}}

and :func:`render` turns every such file into ``reports/<name>.png`` (matplotlib, Agg
backend, no display needed).  Files older than the regression start are ignored, so a
figure always shows data of the run that produced it.
"""
from __future__ import annotations

import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PLOT_DIR = REPO / "build" / "plots"


def write_series(name: str, title: str, series: dict, xlabel: str = "epoch",
                 ylabel: str = "loss", plot_dir: Path | None = None) -> Path:
    """Called from a test: store one figure's data."""
    d = Path(plot_dir or PLOT_DIR)
    d.mkdir(parents=True, exist_ok=True)
    f = d / f"{name}.json"
    f.write_text(json.dumps({"title": title, "xlabel": xlabel, "ylabel": ylabel,
                             "series": {k: [float(v) for v in vs] for k, vs in series.items()}}))
    return f


def render(reports: Path, since: float = 0.0, plot_dir: Path | None = None) -> list[Path]:
    """Render every figure written after ``since`` (a time stamp) to ``reports``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = []
    d = Path(plot_dir or PLOT_DIR)
    if not d.is_dir():
        return out
    reports.mkdir(parents=True, exist_ok=True)
    for f in sorted(d.glob("*.json")):
        if f.stat().st_mtime < since:
            continue
        spec = json.loads(f.read_text())
        fig, ax = plt.subplots(figsize=(6, 4))
        for label, ys in spec["series"].items():
            ax.plot(range(1, len(ys) + 1), ys, marker="o", label=label)
        ax.set_title(spec["title"])
        ax.set_xlabel(spec["xlabel"])
        ax.set_ylabel(spec["ylabel"])
        ax.grid(True, alpha=0.3)
        ax.legend()
        png = reports / f"{f.stem}.png"
        fig.tight_layout()
        # fixed metadata so the file does not change with the date
        fig.savefig(png, dpi=100, metadata={"Software": None})
        plt.close(fig)
        out.append(png)
    return out

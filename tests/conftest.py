import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy: see leka/__init__.py
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("LEKA_HOME", str(ROOT / ".leka-test"))
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

"""Serving benchmarks, predicted before measured (planner.validation.serving_first).

    python3 validation/serving_predict.py predict validation/serving/to_predict/<source>.yaml
    python3 validation/serving_predict.py score validation/serving/predictions/<file>.yaml
    python3 validation/serving_predict.py rescore     (today's planner; secondary, planner.validation.serving_rescore)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.inputs.facts import load_facts  # noqa: E402
from planner.validation.serving_first import SERVING_DIR, predict_file, score  # noqa: E402
from planner.validation.serving_rescore import rescore  # noqa: E402


def main(argv: list[str]) -> int:
    if argv[:1] == ["rescore"] and len(argv) == 1:
        print(json.dumps(rescore(load_facts()), indent=2))
        return 0
    if len(argv) != 2 or argv[0] not in ("predict", "score"):
        print(__doc__, file=sys.stderr)
        return 2
    if argv[0] == "predict":
        print(predict_file(argv[1], load_facts()))
    else:
        print(json.dumps(score(argv[1], SERVING_DIR / "measured.yaml"), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

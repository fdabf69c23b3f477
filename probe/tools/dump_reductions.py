"""Dev tool: the reduced configuration of every model type the catalog knows, as JSON.

    PYTHONPATH=probe .venv/bin/python probe/tools/dump_reductions.py --out /tmp/reductions.json [--only a,b]

For each registered model type (heads.registered_model_types, as `catalog` lists them) it
writes three reductions of the type's default configuration: "tiny" (reduce_config),
"milder" (milder_config: a reduction rerun's milder reduction) and "given"
(reduce_given_config: the default configuration treated as a Hub model's own, its
features kept). Each is the configuration's to_dict(), or {"error": ...} where the
reduction raises. Run it before and after a change to the reduction rules and diff the
two files: the rules are meant to change no model's reduced configuration unless the
change says so.
"""

import argparse
import json
import os
import sys
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from compatlab_probe.host.runtime import apply_env  # noqa: E402

apply_env()

from compatlab_probe.models import factory, heads  # noqa: E402


def _plain(value):
    """A JSON-able copy: sets and tuples as sorted lists / lists, other objects as repr."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, set):
        return sorted(_plain(v) for v in value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def _reduced(reduce):
    """The reduced configuration's to_dict(), or {"error": TYPE: MESSAGE}."""
    try:
        return _plain(reduce().to_dict())
    except Exception as exc:  # noqa: BLE001 - a reduction's failure is part of what it does
        return {"error": f"{type(exc).__name__}: {exc}"}


def dump(model_types):
    """{model_type: {"tiny", "milder", "given"}} for `model_types`."""
    from transformers import CONFIG_MAPPING

    out = {}
    for model_type in model_types:
        out[model_type] = {
            "tiny": _reduced(lambda t=model_type: factory.reduce_config(t)),
            "milder": _reduced(lambda t=model_type: factory.milder_config(None, t)),
            "given": _reduced(lambda t=model_type: factory.reduce_given_config(CONFIG_MAPPING[t]())),
        }
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="the JSON file to write")
    parser.add_argument("--only", default="", help="comma-separated model types (default: every one)")
    args = parser.parse_args()
    types = [t for t in args.only.split(",") if t] or heads.registered_model_types()
    warnings.simplefilter("ignore")
    result = dump(types)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1, sort_keys=True)
        f.write("\n")
    errors = sum(1 for r in result.values() for v in r.values() if "error" in v)
    print(f"{len(result)} model types, {3 * len(result)} reductions ({errors} raise) -> {args.out}")


if __name__ == "__main__":
    main()

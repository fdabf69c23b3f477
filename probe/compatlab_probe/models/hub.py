"""Hub models: `hub:ORG/NAME[@REVISION]` through huggingface_hub's own download and cache code.

`python -m compatlab_probe.models.hub resolve [--weights] SPEC...` (the sweep's plan, once):
  {"models": {SPEC: {"model_id": "hub:ORG/NAME@COMMIT", "repo_id", "commit", "config_hash",
                     "model_type", "head_class", "head_kind", "head_classes": [...]}
                 | {"model_id": "hub:ORG/NAME@REVISION", "repo_id", "error": REASON}}}
  Downloads config.json (and generation_config.json where the repo has one; with --weights
  the weight files) into the Hub cache, or finds them there; honours HF_HUB_OFFLINE,
  HF_HUB_CACHE/HF_HOME and HF_ENDPOINT as huggingface_hub reads them. A failure is an
  answer ({"error": ...}), never an exit: the test child meets it again as fail_to_load.
`python -m compatlab_probe.models.hub list --task T --sort downloads|trending --limit N`:
  {"models": ["ORG/NAME", ...]} from huggingface_hub's list API; {"error": ...} and exit 1
  when the Hub cannot be reached.
Both first try the endpoint once (`unreachable`): huggingface_hub retries a refused or
unresolvable connection five times with back-off (about 24 s per file) before it gives up,
so a Hub that does not answer at all is told at once, and `resolve` then answers from the
cache as offline does, with "no network" as the reason for what the cache lacks.

The test child (`fetch`, from kinds/common.py) reads the same files again through
`hf_hub_download`: from the cache when the plan found them; the zygote runs offline, and a
child goes to the network only when the sweep itself was not offline (COMPATLAB_HUB_OFFLINE,
set by the supervisor from the sweep's HF_HUB_OFFLINE). See doc/model-factory.md, "Hub models".
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..host.answer import answer, refuse

HUB_PREFIX = "hub:"
# ORG/NAME as the Hub spells repo ids; a revision is a branch, tag or commit.
_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
_REVISION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,127}$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
WEIGHT_INDEX = "model.safetensors.index.json"
WEIGHT_FILE = "model.safetensors"
LIST_SORTS = {"downloads": "downloads", "trending": "trending_score"}
# A config.json larger than this is refused before it is read (doc/limits.md): Python holds
# a parsed JSON file in about ten times its size (a 76 MB config cost 720 MB more).
MAX_CONFIG_BYTES = 4 << 20
# What `resolve` may allocate (RLIMIT_DATA, doc/limits.md): it holds about 0.25 GiB once
# torch is imported; the shared libraries it maps (CUDA's are gigabytes) do not count. Past
# this bound an allocation fails as MemoryError, which fails the model being resolved.
MAX_RESOLVER_BYTES = 2 << 30


class HubError(Exception):
    """A Hub model that cannot be had; str() is the one-line reason."""


@dataclass(frozen=True)
class HubModel:
    repo_id: str
    commit: str
    snapshot_dir: str   # the cache's snapshots/<commit> directory
    config_hash: str    # SHA-256 of config.json's bytes
    has_generation_config: bool
    config: Any = None  # config.json's value, as read_config checked and parsed it


def parse_hub_id(model_id: str) -> tuple[str, str]:
    """(repo id, revision or "") of "hub:ORG/NAME[@REVISION]"; HubError when malformed."""
    if not model_id.startswith(HUB_PREFIX):
        raise HubError(f"{model_id!r} is not a hub:ORG/NAME[@REVISION] id")
    repo, _, revision = model_id[len(HUB_PREFIX):].partition("@")
    if not _REPO.match(repo) or ".." in repo:
        raise HubError(f"{model_id!r}: the repo id is not ORG/NAME")
    if revision and (not _REVISION.match(revision) or ".." in revision):
        raise HubError(f"{model_id!r}: bad revision {revision!r}")
    return repo, revision


def child_online() -> bool:
    """Whether a test child may reach the Hub: the sweep itself was not offline."""
    return os.environ.get("COMPATLAB_HUB_OFFLINE", "1") not in ("1", "true", "TRUE", "yes", "ON", "on")


@contextlib.contextmanager
def network(online: bool | None) -> Iterator[None]:
    """huggingface_hub's offline switch for the calls inside (None: leave it as the env set it)."""
    from huggingface_hub import constants

    saved = constants.HF_HUB_OFFLINE
    if online is not None:
        constants.HF_HUB_OFFLINE = not online
    try:
        yield
    finally:
        constants.HF_HUB_OFFLINE = saved


# Why the endpoint did not answer `unreachable`'s one try ("" until then, or when it did).
_UNREACHABLE = ""


def unreachable() -> str:
    """"" when the Hub endpoint (HF_ENDPOINT) answers one plain request, whatever the answer;
    otherwise the one-line reason (connection refused, no such host, connect timeout).
    Goes through huggingface_hub's own HTTP session, so its proxies and headers apply; the
    errors are that session's library's (httpx or the httpx2 fork, whichever it uses)."""
    import importlib

    from huggingface_hub import constants
    from huggingface_hub.utils import get_session

    session = get_session()
    http = importlib.import_module(type(session).__module__.split(".")[0])
    try:
        session.head(constants.ENDPOINT, timeout=constants.HF_HUB_ETAG_TIMEOUT, follow_redirects=False)
    except (http.ConnectError, http.ConnectTimeout) as exc:
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    except http.HTTPError:
        return ""  # it answered something (or broke mid-answer): let huggingface_hub judge
    return ""


def reason(exc: BaseException, repo: str, revision: str, filename: str = "config.json") -> str:
    """The one-line reason the download of `filename` failed, by huggingface_hub's error classes."""
    from huggingface_hub import constants, errors

    rev = revision or "main"
    if isinstance(exc, errors.GatedRepoError):
        return f"gated repo {repo}: access not granted (accept its terms on the Hub and log in)"
    if isinstance(exc, errors.RevisionNotFoundError):
        return f"revision {rev} not found in {repo}"
    if isinstance(exc, errors.RepositoryNotFoundError):
        return f"repo {repo} not found on the Hub (or private)"
    if isinstance(exc, errors.RemoteEntryNotFoundError):
        return f"{repo}@{rev} has no {filename}"
    if isinstance(exc, (errors.LocalEntryNotFoundError, errors.OfflineModeIsEnabled)):
        if _UNREACHABLE:
            return (f"no network: the Hub ({constants.ENDPOINT}) is unreachable ({_UNREACHABLE}) and {filename} of "
                    f"{repo}@{rev} is not in the Hub cache")
        if constants.HF_HUB_OFFLINE:
            return f"{filename} of {repo}@{rev} is not in the Hub cache and the Hub is offline (HF_HUB_OFFLINE=1)"
        return (f"no network: the Hub ({constants.ENDPOINT}) is unreachable and {filename} of {repo}@{rev} "
                "is not in the Hub cache")
    return f"{repo}@{rev}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"


def _download(repo: str, filename: str, revision: str) -> str:
    from huggingface_hub import hf_hub_download

    return hf_hub_download(repo, filename, revision=revision or None)


def _optional(repo: str, filename: str, revision: str) -> str | None:
    """A file the repo may lack: its cache path, or None."""
    from huggingface_hub import errors

    try:
        return _download(repo, filename, revision)
    except (errors.EntryNotFoundError, errors.LocalEntryNotFoundError):
        return None


def fetch(repo: str, revision: str = "", weights: bool = False) -> HubModel:
    """config.json (and generation_config.json, and with `weights` the safetensors files) of
    `repo` at `revision` through hf_hub_download; HubError with the reason when it fails."""
    try:
        config_path = _download(repo, "config.json", revision)
    except Exception as exc:  # every failure of the download is a reason, never a crash
        raise HubError(reason(exc, repo, revision)) from exc
    snapshot = os.path.dirname(config_path)
    commit = os.path.basename(snapshot)  # the cache's layout: snapshots/<commit>/<file>
    try:
        config = read_config(config_path)
    except HubError as exc:
        raise HubError(f"{repo}@{commit}: {exc}") from exc
    with open(config_path, "rb") as f:
        config_hash = hashlib.file_digest(f, "sha256").hexdigest()
    generation = _optional(repo, "generation_config.json", commit)
    if weights:
        fetch_weights(repo, commit)
    return HubModel(repo_id=repo, commit=commit, snapshot_dir=snapshot, config_hash=config_hash,
                    has_generation_config=generation is not None, config=config)


def read_config(path: str) -> Any:
    """config.json's value: at most MAX_CONFIG_BYTES (checked before reading), UTF-8 JSON
    nested no deeper than Python's parser allows; HubError with the reason otherwise."""
    size = os.path.getsize(path)
    if size > MAX_CONFIG_BYTES:
        raise HubError(f"config.json holds {size} bytes, over the limit of {MAX_CONFIG_BYTES} "
                       "(doc/limits.md)")
    with open(path, "rb") as f:
        data = f.read(MAX_CONFIG_BYTES + 1)
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise HubError(f"config.json is not UTF-8 (byte {exc.start}: {exc.reason})") from None
    except RecursionError:
        raise HubError("config.json is nested too deeply to parse") from None
    except ValueError as exc:
        raise HubError(f"config.json is not JSON: {exc}") from None


def limit_memory(max_bytes: int = MAX_RESOLVER_BYTES) -> None:
    """Caps what this process allocates (RLIMIT_DATA: heap and private writable mappings)
    at `max_bytes`, or lower where it is."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    bound = max_bytes if hard == resource.RLIM_INFINITY else min(max_bytes, hard)
    if soft == resource.RLIM_INFINITY or soft > bound:
        resource.setrlimit(resource.RLIMIT_DATA, (bound, hard))


def fetch_weights(repo: str, commit: str) -> list[str]:
    """The safetensors weight files of `repo` at `commit` (an index and its shards, or one
    file); HubError naming why when there are none to be had."""
    try:
        wanted = WEIGHT_INDEX
        index = _optional(repo, WEIGHT_INDEX, commit)
        if index is None:
            wanted = WEIGHT_FILE
            return [_download(repo, WEIGHT_FILE, commit)]
        with open(index) as f:
            shards = sorted(set(json.load(f).get("weight_map", {}).values()))
        paths = []
        for wanted in shards:
            paths.append(_download(repo, wanted, commit))
        return paths
    except Exception as exc:
        raise HubError(f"no weights: {reason(exc, repo, commit, wanted)}") from exc


def describe(repo: str, revision: str, weights: bool = False) -> dict[str, Any]:
    """The `resolve` answer for one model."""
    try:
        model = fetch(repo, revision, weights)
    except HubError as exc:
        return {"model_id": f"{HUB_PREFIX}{repo}@{revision or 'main'}", "repo_id": repo, "error": str(exc)}
    from . import heads  # imports torch (transformers' auto tables): only once a config is there

    config = model.config
    model_type = config.get("model_type") if isinstance(config, dict) else None
    out = {"model_id": f"{HUB_PREFIX}{repo}@{model.commit}", "repo_id": repo, "commit": model.commit,
           "config_hash": model.config_hash, "model_type": model_type or ""}
    if not isinstance(model_type, str) or model_type not in heads.registered_model_types():
        out["error"] = f"{repo}@{model.commit}: config.json's model_type {model_type!r} is not registered by " \
                       "the installed transformers"
        return out
    head_class, head_kind = heads.head_for(model_type)
    for name in config.get("architectures") or []:
        kind = heads.head_kind_of_class(model_type, name) if isinstance(name, str) else None
        if kind:
            head_class, head_kind = name, kind
            break
    out.update(head_class=head_class or "", head_kind=head_kind or "",
               head_classes=heads.head_classes(model_type))
    return out


def describe_or_error(repo: str, revision: str, weights: bool = False) -> dict[str, Any]:
    """describe(), where any failure (a MemoryError under limit_memory included) is that
    model's error: one model never stops the others."""
    try:
        return describe(repo, revision, weights)
    except Exception as exc:  # noqa: BLE001 - one model's failure is its answer
        first = str(exc).splitlines()[0][:300] if str(exc) else ""
        return {"model_id": f"{HUB_PREFIX}{repo}@{revision or 'main'}", "repo_id": repo,
                "error": f"{repo}: cannot resolve: {type(exc).__name__}: {first}".rstrip(": ")}


def list_models(task: str, sort: str, limit: int) -> list[str]:
    """Hub ids from huggingface_hub's list API (pipeline tag `task`, most first by `sort`)."""
    from huggingface_hub import HfApi

    return [m.id for m in HfApi().list_models(pipeline_tag=task or None, sort=LIST_SORTS[sort], limit=limit)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    resolve = sub.add_parser("resolve")
    resolve.add_argument("--weights", action="store_true")
    resolve.add_argument("specs", nargs="+")
    listing = sub.add_parser("list")
    listing.add_argument("--task", default="")
    listing.add_argument("--sort", choices=sorted(LIST_SORTS), default="downloads")
    listing.add_argument("--limit", type=int, default=20)
    args = parser.parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from huggingface_hub import constants

    global _UNREACHABLE
    if not constants.HF_HUB_OFFLINE:
        _UNREACHABLE = unreachable()
    if args.command == "resolve":
        limit_memory()
    if args.command == "list":
        try:
            if _UNREACHABLE:
                raise HubError(_UNREACHABLE)
            out = {"models": list_models(args.task, args.sort, args.limit)}
        except Exception as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            return refuse(f"the Hub ({constants.ENDPOINT}) cannot be reached: {first}", 1)
    else:
        models = {}
        for spec in args.specs:
            try:
                repo, revision = parse_hub_id(spec)
            except HubError as exc:
                return refuse(str(exc), 2)
            with network(False if _UNREACHABLE else None):  # the cache answers, as offline
                models[spec] = describe_or_error(repo, revision, args.weights)
        out = {"models": models}
    return answer(out)


if __name__ == "__main__":
    sys.exit(main())

"""Published datasets on the Hub: `compatlab publish` and `compatlab import --from-hub`.

`python -m compatlab_probe.hub_dataset publish DIR --repo ORG/NAME [--revision BRANCH]`:
  create_repo(repo_type="dataset", exist_ok=True), the branch when one is named, then
  upload_folder of DIR's README.md and Parquet files; answers
  {"repo_id", "revision", "commit", "url", "files": [...]}.
`python -m compatlab_probe.hub_dataset download ORG/NAME[@REVISION]`:
  snapshot_download of the dataset's README.md and Parquet files into the Hub cache, after
  checking the file listing against the import's bounds; answers {"repo_id", "commit",
  "path"}. compatlab then imports the Parquet files under "path" as any untrusted Parquet.
Both use huggingface_hub as it is configured (HF_TOKEN or the login, HF_ENDPOINT,
HF_HUB_CACHE/HF_HOME, HF_HUB_OFFLINE). A failure answers {"error": REASON} with exit 1; a
malformed argument exit 2. No model semantics here: this is the Hub's transport only.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from .host.answer import answer, failure_reason, refuse
from .models.hub import _REPO, _REVISION, unreachable

# What a published dataset holds, and so all that is uploaded or downloaded.
PATTERNS = ["README.md", "*.parquet", "**/*.parquet"]
# The import's bounds (doc/limits.md): at most this many files, and bytes in all.
MAX_FILES = 4096
MAX_BYTES = 2 << 30


class DatasetError(Exception):
    """A publish or download that cannot be done; str() is the one-line reason."""


def parse_spec(spec: str) -> tuple[str, str]:
    """(repo id, revision or "") of "ORG/NAME[@REVISION]"; ValueError when malformed."""
    repo, _, revision = spec.partition("@")
    if not _REPO.match(repo) or ".." in repo:
        raise ValueError(f"{spec!r}: the repo id is not ORG/NAME")
    if revision and (not _REVISION.match(revision) or ".." in revision):
        raise ValueError(f"{spec!r}: bad revision {revision!r}")
    return repo, revision


def _check_reachable() -> None:
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        raise DatasetError("the Hub is offline (HF_HUB_OFFLINE is set)")
    why = unreachable()
    if why:
        raise DatasetError(f"the Hub ({constants.ENDPOINT}) cannot be reached: {why}")


def publish(folder: str, repo: str, revision: str) -> dict[str, Any]:
    """Uploads `folder`'s dataset files to dataset repo `repo` (branch `revision` or main)."""
    from huggingface_hub import HfApi

    if not os.path.isfile(os.path.join(folder, "README.md")):
        raise DatasetError(f"{folder}: no README.md; write the dataset with `compatlab export --publish`")
    _check_reachable()
    api = HfApi()
    url = api.create_repo(repo, repo_type="dataset", exist_ok=True)
    if revision:
        api.create_branch(repo, branch=revision, repo_type="dataset", exist_ok=True)
    info = api.upload_folder(folder_path=folder, repo_id=repo, repo_type="dataset",
                             revision=revision or None, allow_patterns=PATTERNS,
                             commit_message="compatlab publish")
    files = sorted(os.path.relpath(os.path.join(d, f), folder).replace(os.sep, "/")
                   for d, _, names in os.walk(folder) for f in names
                   if f == "README.md" or f.endswith(".parquet"))
    return {"repo_id": repo, "revision": revision or "main", "commit": info.oid or "",
            "url": str(url), "files": files}


def _check_listing(api: Any, repo: str, revision: str) -> str:
    """The commit of `repo` at `revision`, once its dataset files are within the bounds."""
    info = api.dataset_info(repo, revision=revision or None, files_metadata=True)
    files = [s for s in info.siblings or [] if s.rfilename == "README.md" or s.rfilename.endswith(".parquet")]
    if not any(s.rfilename.endswith(".parquet") for s in files):
        raise DatasetError(f"dataset {repo} has no Parquet file")
    if len(files) > MAX_FILES:
        raise DatasetError(f"dataset {repo} has {len(files)} files, over the limit of {MAX_FILES}")
    total = sum(s.size or 0 for s in files)
    if total > MAX_BYTES:
        raise DatasetError(f"dataset {repo} holds {total} bytes, over the import limit of {MAX_BYTES}")
    return info.sha


def download(repo: str, revision: str) -> dict[str, Any]:
    """The dataset's README.md and Parquet files in the Hub cache, at one commit."""
    from huggingface_hub import HfApi, errors, snapshot_download

    _check_reachable()
    api = HfApi()
    try:
        commit = _check_listing(api, repo, revision)
    except errors.RevisionNotFoundError as exc:
        raise DatasetError(f"revision {revision or 'main'} not found in dataset {repo}") from exc
    except errors.RepositoryNotFoundError as exc:
        raise DatasetError(f"dataset {repo} not found on the Hub (or private)") from exc
    path = snapshot_download(repo, repo_type="dataset", revision=commit, allow_patterns=PATTERNS)
    return {"repo_id": repo, "commit": commit, "path": os.path.abspath(path)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("publish")
    up.add_argument("folder")
    up.add_argument("--repo", required=True)
    up.add_argument("--revision", default="")
    down = sub.add_parser("download")
    down.add_argument("spec")
    args = parser.parse_args(argv)
    try:
        if args.command == "publish":
            repo, _ = parse_spec(args.repo)
            if args.revision:
                parse_spec(f"{repo}@{args.revision}")
        else:
            repo, revision = parse_spec(args.spec)
    except ValueError as exc:
        return refuse(str(exc), 2)
    try:
        out = publish(args.folder, repo, args.revision) if args.command == "publish" else download(repo, revision)
    except Exception as exc:  # huggingface_hub's errors, the network's: one line each
        return refuse(failure_reason(exc, DatasetError), 1)
    return answer(out)


if __name__ == "__main__":
    sys.exit(main())

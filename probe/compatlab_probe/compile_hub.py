"""The compile store's Hub remote (doc/compile-cache.md): a dataset repository holding the
store's layout, entries/<ID>/... . The Hub's transport only; compatlab checks every entry
it downloads (src/cache) before it keeps one.

`python -m compatlab_probe.compile_hub keys --repo ORG/NAME --dir DIR`:
  every entry's key.json and entry.json downloaded into DIR (snapshot_download with those
  patterns), after checking the repository's listing against the bounds; answers
  {"entries": N, "commit": SHA} (N 0 when the repository does not exist yet).
`python -m compatlab_probe.compile_hub pull --repo ORG/NAME --dir DIR ID...`:
  the named entries' files downloaded into DIR; answers {"entries": N, "commit": SHA}.
`python -m compatlab_probe.compile_hub push --repo ORG/NAME --dir ENTRIES`:
  create_repo (a dataset repository, exist_ok), then upload_folder of ENTRIES (checked entries, each a directory
  named by its id) into entries/ in one commit; answers {"commit": SHA, "entries": N}.
huggingface_hub as it is configured (HF_TOKEN or the login, HF_ENDPOINT, HF_HUB_OFFLINE).
A failure answers {"error": REASON} with exit 1; a malformed argument exit 2.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import Any

from .host.answer import answer, failure_reason, refuse
from .models.hub import _REPO, unreachable

# The store's bounds (src/cache/store.h, entry.h; doc/limits.md).
MAX_ENTRIES = 100_000
MAX_FILES_PER_ENTRY = 4096 + 2
MAX_ENTRY_BYTES = 2 << 30
_ENTRY_ID = re.compile(r"^[0-9a-f]{64}$")
_ENTRY_PATH = re.compile(r"^entries/([0-9a-f]{64})/")


class RemoteError(Exception):
    """A push or pull that cannot be done; str() is the one-line reason."""


def _reachable() -> None:
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        raise RemoteError("the Hub is offline (HF_HUB_OFFLINE is set)")
    why = unreachable()
    if why:
        raise RemoteError(f"the Hub ({constants.ENDPOINT}) cannot be reached: {why}")


def _listing(api: Any, repo: str) -> tuple[str, dict[str, list[tuple[str, int]]]]:
    """The repository's commit and its entries' files {id: [(path, size)]}, within bounds."""
    info = api.dataset_info(repo, files_metadata=True)
    entries: dict[str, list[tuple[str, int]]] = {}
    for sibling in info.siblings or []:
        match = _ENTRY_PATH.match(sibling.rfilename)
        if match:
            entries.setdefault(match.group(1), []).append((sibling.rfilename, sibling.size or 0))
    if len(entries) > MAX_ENTRIES:
        raise RemoteError(f"{repo} holds {len(entries)} entries, over the limit of {MAX_ENTRIES}")
    return info.sha, entries


def keys(repo: str, folder: str) -> dict[str, Any]:
    """Every entry's key.json and entry.json in `folder`."""
    from huggingface_hub import HfApi, errors, snapshot_download

    _reachable()
    try:
        commit, entries = _listing(HfApi(), repo)
    except errors.RepositoryNotFoundError:
        return {"entries": 0, "commit": ""}  # no repository yet: a first push makes it
    if entries:
        snapshot_download(repo, repo_type="dataset", revision=commit, local_dir=folder,
                          allow_patterns=["entries/*/key.json", "entries/*/entry.json"])
    return {"entries": len(entries), "commit": commit}


def pull(repo: str, folder: str, ids: list[str]) -> dict[str, Any]:
    """The entries `ids` whole in `folder`, each within the entry bounds."""
    from huggingface_hub import HfApi, snapshot_download

    _reachable()
    commit, entries = _listing(HfApi(), repo)
    wanted = [i for i in ids if i in entries]
    for entry_id in wanted:
        files = entries[entry_id]
        if len(files) > MAX_FILES_PER_ENTRY or sum(size for _, size in files) > MAX_ENTRY_BYTES:
            raise RemoteError(f"entry {entry_id} of {repo} is over the entry bounds")
    if wanted:
        snapshot_download(repo, repo_type="dataset", revision=commit, local_dir=folder,
                          allow_patterns=[f"entries/{entry_id}/**" for entry_id in wanted])
    return {"entries": len(wanted), "commit": commit}


def push(repo: str, folder: str) -> dict[str, Any]:
    """`folder`'s entries uploaded under entries/ in one commit."""
    from huggingface_hub import HfApi

    names = [n for n in sorted(os.listdir(folder)) if _ENTRY_ID.match(n)]
    _reachable()
    api = HfApi()
    api.create_repo(repo, repo_type="dataset", exist_ok=True)
    info = api.upload_folder(folder_path=folder, repo_id=repo, repo_type="dataset", path_in_repo="entries",
                             allow_patterns=[f"{n}/**" for n in names],
                             commit_message=f"compatlab cache push: {len(names)} entries")
    return {"commit": info.oid or "", "entries": len(names)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("keys", "pull", "push"))
    parser.add_argument("--repo", required=True)
    parser.add_argument("--dir", required=True)
    parser.add_argument("ids", nargs="*")
    args = parser.parse_intermixed_args(argv)
    try:
        repo = args.repo
        if not _REPO.match(repo) or ".." in repo or any(not _ENTRY_ID.match(i) for i in args.ids):
            raise ValueError("expected a repository ORG/NAME and entry ids of 64 hex digits")
    except ValueError as exc:
        return refuse(str(exc), 2)
    try:
        if args.command == "keys":
            out = keys(repo, args.dir)
        elif args.command == "pull":
            out = pull(repo, args.dir, args.ids)
        else:
            out = push(repo, args.dir)
    except Exception as exc:  # huggingface_hub's errors, the network's: one line each
        return refuse(failure_reason(exc, RemoteError), 1)
    return answer(out)


if __name__ == "__main__":
    sys.exit(main())

"""Test Hub models and datasets without a network: a Hub cache in huggingface_hub's own
layout, and a stand-in Hub API on 127.0.0.1 (point HF_ENDPOINT at `StandInHub.url`).

Both make huggingface_hub's real download, upload and cache code run: the cache is what
`hf_hub_download` reads offline (models--ORG--NAME/{blobs,refs,snapshots}); the server
answers its HEAD/GET /ORG/NAME/resolve/REV/FILE (X-Repo-Commit, ETag, Content-Length,
X-Error-Code RepoNotFound, GatedRepo, EntryNotFound, RevisionNotFound) and GET /api/models.
Dataset repos (`StandInHub.datasets`: {repo_id: {branch: {path: bytes}}}) take what
`create_repo`, `create_branch` and `upload_folder` without hf_xet ask (POST /api/repos/create,
/api/validate-yaml, /api/datasets/R/branch/B, /api/datasets/R/preupload/REV answering every
file "regular", /api/datasets/R/commit/REV with the NDJSON payload) and what
`snapshot_download` reads (GET /api/datasets/R/revision/REV, /api/datasets/R/tree/REV,
HEAD/GET /datasets/R/resolve/REV/FILE). Run uploads with HF_HUB_DISABLE_XET=1: with hf_xet
installed, upload_folder goes through the Xet storage protocol, which this server does not speak.
The shared test repos (`REPOS`) are tiny configs of real features: a GQA decoder with
llama3-style rope scaling and a sliding window, a mixture of experts, an encoder.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import os
import threading
import urllib.parse

# Tiny versions of Hub configs; each keeps the feature a test asserts after reduction.
DECODER = {  # GQA 4:1, llama3 rope scaling, a sliding window on every other layer, untied
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 256,
    "intermediate_size": 512, "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2,
    "vocab_size": 2048, "max_position_embeddings": 4096, "use_sliding_window": True, "sliding_window": 64,
    "max_window_layers": 2, "tie_word_embeddings": False,
    "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
                        "high_freq_factor": 4.0, "original_max_position_embeddings": 1024},
}
MOE = {  # 16 experts, top-2 routing, tied embeddings
    "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 128,
    "intermediate_size": 256, "moe_intermediate_size": 96, "num_hidden_layers": 3, "num_attention_heads": 4,
    "num_key_value_heads": 2, "head_dim": 32, "num_experts": 16, "num_experts_per_tok": 2,
    "vocab_size": 2048, "tie_word_embeddings": True,
}
ENCODER = {
    "architectures": ["BertForMaskedLM"], "model_type": "bert", "hidden_size": 128, "intermediate_size": 256,
    "num_hidden_layers": 3, "num_attention_heads": 4, "vocab_size": 2048, "max_position_embeddings": 128,
}
REPOS = {"testorg/tiny-decoder": DECODER, "testorg/tiny-moe": MOE, "testorg/tiny-encoder": ENCODER}
GENERATION = {"bos_token_id": 1, "eos_token_id": 2, "do_sample": False}


def commit_of(repo_id: str, files: dict[str, bytes]) -> str:
    """A stable 40-hex commit id for a repo's content."""
    h = hashlib.sha1(repo_id.encode())
    for name in sorted(files):
        h.update(name.encode() + b"\0" + files[name])
    return h.hexdigest()


def repo_files(config: dict, generation: bool = True) -> dict[str, bytes]:
    files = {"config.json": json.dumps(config, indent=2, sort_keys=True).encode()}
    if generation:
        files["generation_config.json"] = json.dumps(GENERATION).encode()
    return files


def write_cache(cache_dir: str, repo_id: str, files: dict[str, bytes], ref: str = "main") -> str:
    """Writes `files` of `repo_id` into a Hub cache (HF_HUB_CACHE) as hf_hub_download leaves
    them: blobs by git-sha1/sha256 etag, refs/REF holding the commit, snapshots/COMMIT/FILE
    relative symlinks to the blobs. Returns the commit."""
    commit = commit_of(repo_id, files)
    root = os.path.join(cache_dir, "models--" + repo_id.replace("/", "--"))
    for sub in ("blobs", "refs", os.path.join("snapshots", commit)):
        os.makedirs(os.path.join(root, sub), exist_ok=True)
    for name, data in files.items():
        etag = hashlib.sha256(data).hexdigest()
        with open(os.path.join(root, "blobs", etag), "wb") as f:
            f.write(data)
        link = os.path.join(root, "snapshots", commit, name)
        if not os.path.lexists(link):
            os.symlink(os.path.join("..", "..", "blobs", etag), link)
    with open(os.path.join(root, "refs", ref), "w") as f:
        f.write(commit)
    return commit


class StandInHub:
    """A Hub API on 127.0.0.1 in a thread: repos {repo_id: files}, gated repo ids, model
    listings. `requests` records (method, path) of what was asked."""

    def __init__(self, repos: dict[str, dict[str, bytes]], gated: tuple[str, ...] = (),
                 listing: list[dict] | None = None):
        self.repos = {r: (commit_of(r, f), f) for r, f in repos.items()}
        self.gated = set(gated)
        self.listing = listing or []
        self.requests = []
        self.datasets: dict[str, dict[str, dict[str, bytes]]] = {}
        self.dataset_commits: dict[str, tuple[str, dict[str, bytes]]] = {}  # commit: (repo, files)
        self.lock = threading.Lock()
        hub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_HEAD(self):
                hub._answer(self, body=False)

            def do_GET(self):
                hub._answer(self, body=True)

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                with hub.lock:
                    hub._post(self, self.rfile.read(length))

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def commit(self, repo_id: str) -> str:
        return self.repos[repo_id][0]

    def dataset_commit(self, repo_id: str, branch: str = "main") -> str:
        return commit_of(f"{repo_id}@{branch}", self.datasets[repo_id][branch])

    def _json(self, h, code, value, body=True):
        return self._send(h, code, json.dumps(value).encode(), body, {"Content-Type": "application/json"})

    def _post(self, h, data):
        path = urllib.parse.unquote(urllib.parse.urlsplit(h.path).path)
        self.requests.append(("POST", path))
        if path == "/api/repos/create":
            req = json.loads(data)
            repo_id = f"{req['organization']}/{req['name']}"
            url = f"{self.url}/datasets/{repo_id}"
            if req.get("type") != "dataset":
                return self._json(h, 400, {"error": "only dataset repos here"})
            if repo_id in self.datasets:
                return self._json(h, 409, {"error": "You already created this dataset repo", "url": url})
            self.datasets[repo_id] = {"main": {}}
            self.dataset_commits[self.dataset_commit(repo_id)] = (repo_id, {})
            return self._json(h, 200, {"url": url})
        if path == "/api/validate-yaml":
            return self._json(h, 200, {"errors": [], "warnings": []})
        parts = path.split("/")  # "", "api", "datasets", ORG, NAME, ACTION, REV...
        if len(parts) < 7 or parts[:3] != ["", "api", "datasets"]:
            return self._json(h, 404, {"error": "not found"})
        repo_id, action, revision = f"{parts[3]}/{parts[4]}", parts[5], "/".join(parts[6:])
        branches = self.datasets.get(repo_id)
        if branches is None:
            return self._send(h, 404, b"no repo", True, {"X-Error-Code": "RepoNotFound"})
        if action == "branch":
            if revision in branches:
                return self._json(h, 409, {"error": "branch exists"})
            branches[revision] = dict(branches["main"])
            return self._json(h, 200, {})
        if revision not in branches:
            return self._send(h, 404, b"no revision", True, {"X-Error-Code": "RevisionNotFound"})
        if action == "preupload":
            files = [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                     for f in json.loads(data)["files"]]
            return self._json(h, 200, {"files": files})
        if action == "commit":
            files = dict(branches[revision])
            for line in data.splitlines():
                op = json.loads(line)
                if op["key"] == "file":
                    files[op["value"]["path"]] = base64.b64decode(op["value"]["content"])
                elif op["key"] == "deletedFile":
                    files.pop(op["value"]["path"], None)
            branches[revision] = files
            commit = self.dataset_commit(repo_id, revision)
            self.dataset_commits[commit] = (repo_id, files)
            return self._json(h, 200, {"commitUrl": f"{self.url}/datasets/{repo_id}/commit/{commit}",
                                       "commitOid": commit})
        return self._json(h, 404, {"error": "not found"})

    def _dataset_files(self, repo_id, revision):
        """(commit, files) of a dataset repo at a branch or commit, or None."""
        branches = self.datasets.get(repo_id, {})
        if revision in branches:
            return self.dataset_commit(repo_id, revision), branches[revision]
        found = self.dataset_commits.get(revision)
        return (revision, found[1]) if found and found[0] == repo_id else None

    def _answer_dataset(self, h, path, body):
        parts = path.split("/")
        api = parts[1] == "api"
        if api:
            parts = parts[1:]  # "", "datasets", ORG, NAME, ACTION, REV...
        repo_id, action, rest = f"{parts[2]}/{parts[3]}", parts[4] if len(parts) > 4 else "", parts[5:]
        if repo_id not in self.datasets:
            return self._send(h, 404, b"no repo", body, {"X-Error-Code": "RepoNotFound"})
        revision = urllib.parse.unquote(rest[0]) if rest else "main"
        found = self._dataset_files(repo_id, revision)
        if found is None:
            return self._send(h, 404, b"no revision", body, {"X-Error-Code": "RevisionNotFound"})
        commit, files = found
        if api and action in ("revision", ""):  # dataset_info, at a revision or main
            siblings = [{"rfilename": name, "size": len(data)} for name, data in sorted(files.items())]
            return self._json(h, 200, {"id": repo_id, "sha": commit, "private": False, "siblings": siblings}, body)
        if api and action == "tree":
            entries = [{"type": "file", "path": name, "size": len(data),
                        "oid": hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()}
                       for name, data in sorted(files.items())]
            return self._json(h, 200, entries, body)
        if not api and action == "resolve" and len(rest) > 1:
            filename = "/".join(rest[1:])
            if filename not in files:
                return self._send(h, 404, b"no entry", body, {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": commit})
            data = files[filename]
            return self._send(h, 200, data, body, {"X-Repo-Commit": commit,
                                                   "ETag": f'"{hashlib.sha256(data).hexdigest()}"'})
        return self._send(h, 404, b"not found", body, {})

    def _answer(self, h, body):
        parsed = urllib.parse.urlsplit(h.path)
        path = urllib.parse.unquote(parsed.path)
        self.requests.append((h.command, path))
        if path.startswith(("/datasets/", "/api/datasets/")):
            with self.lock:
                return self._answer_dataset(h, path, body)
        if path == "/api/models":
            query = urllib.parse.parse_qs(parsed.query)
            rows = [m for m in self.listing if not query.get("pipeline_tag")
                    or m.get("pipeline_tag") in query["pipeline_tag"]]
            key = (query.get("sort") or ["downloads"])[0]  # downloads, trendingScore
            rows.sort(key=lambda m: -m.get(key, 0))
            limit = int((query.get("limit") or [len(rows)])[0])
            return self._send(h, 200, json.dumps(rows[:limit]).encode(), body, {"Content-Type": "application/json"})
        parts = path.lstrip("/").split("/")
        if len(parts) < 5 or parts[2] != "resolve":
            return self._send(h, 404, b"not found", body, {})
        repo_id, revision, filename = "/".join(parts[:2]), parts[3], "/".join(parts[4:])
        if repo_id in self.gated:
            return self._send(h, 403, b"gated", body, {"X-Error-Code": "GatedRepo",
                                                       "X-Error-Message": "Access to model is restricted"})
        if repo_id not in self.repos:
            return self._send(h, 404, b"no repo", body, {"X-Error-Code": "RepoNotFound"})
        commit, files = self.repos[repo_id]
        if revision not in ("main", commit):
            return self._send(h, 404, b"no revision", body, {"X-Error-Code": "RevisionNotFound"})
        if filename not in files:
            return self._send(h, 404, b"no entry", body, {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": commit})
        data = files[filename]
        return self._send(h, 200, data, body, {"X-Repo-Commit": commit,
                                               "ETag": f'"{hashlib.sha256(data).hexdigest()}"'})

    @staticmethod
    def _send(h, code, data, body, headers):
        h.send_response(code)
        for k, v in headers.items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        if body:
            h.wfile.write(data)

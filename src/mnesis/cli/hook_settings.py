"""Where Claude Code and Codex keep their hooks, and mnesis's entries in those files.

Both tools read the same shape, ``{"hooks": {event: [{"matcher"?, "hooks": [{"type":
"command", "command", "timeout"}]}]}}``: Claude Code in its ``settings.json`` (user,
project or local scope), Codex in ``hooks.json`` next to its configuration (user or
project). Installing merges: every other key and hook is kept, an earlier mnesis entry
is replaced, the file is written whole (a temporary file renamed over it).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from mnesis.errors import InvalidArgumentError

__all__ = ["AGENTS", "MARKER", "SCOPES", "entries", "install", "settings_path", "uninstall"]

AGENTS = ("claude-code", "codex")
SCOPES = {"claude-code": ("user", "project", "local"), "codex": ("user", "project")}
MARKER = "mnesis.cli hooks run"
"""What every command mnesis installs contains (how an earlier entry is found again)."""

PRE_COMPACT_TIMEOUT = 600
"""Seconds the tool gives the import before compacting anyway (an import cut short is
resumed by the next call)."""
SESSION_START_TIMEOUT = 120


def settings_path(agent: str, scope: str, cwd: str) -> Path:
    """The file ``agent`` reads its hooks from at ``scope`` (``project`` and ``local``
    under ``cwd``)."""
    if agent not in AGENTS:
        raise InvalidArgumentError(f"unknown agent {agent!r}; use one of {', '.join(AGENTS)}")
    if scope not in SCOPES[agent]:
        choices = ", ".join(SCOPES[agent])
        raise InvalidArgumentError(f"{agent} has no {scope!r} scope; use one of {choices}")
    if agent == "claude-code":
        if scope == "user":
            return Path(os.path.expanduser("~/.claude/settings.json"))
        name = "settings.json" if scope == "project" else "settings.local.json"
        return Path(cwd) / ".claude" / name
    if scope == "user":
        home = os.environ.get("CODEX_HOME") or os.path.expanduser("~/.codex")
        return Path(home) / "hooks.json"
    return Path(cwd) / ".codex" / "hooks.json"


def entries(agent: str, command: str) -> dict[str, list[dict[str, Any]]]:
    """mnesis's hook groups: ``PreCompact`` imports the transcript, ``SessionStart``
    after a compaction (source ``compact``) imports it too and adds the recall note."""
    pre: dict[str, Any] = {"type": "command", "command": command, "timeout": PRE_COMPACT_TIMEOUT}
    start: dict[str, Any] = {
        "type": "command",
        "command": command,
        "timeout": SESSION_START_TIMEOUT,
    }
    if agent == "codex":  # shown while the hook runs
        pre["statusMessage"] = "Saving the history to mnesis"
        start["statusMessage"] = "Telling the model where its history is"
    return {
        "PreCompact": [{"hooks": [pre]}],
        "SessionStart": [{"matcher": "compact", "hooks": [start]}],
    }


def _read(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError) as exc:
        raise InvalidArgumentError(f"{path} is not a JSON file: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("hooks", {}), dict):
        raise InvalidArgumentError(f"{path}: expected a JSON object with a 'hooks' object")
    return data


def _write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=2, ensure_ascii=False)
            out.write("\n")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _without_ours(hooks: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """``hooks`` less every command hook of mnesis (a group left empty goes too), and
    how many were removed."""
    removed = 0
    kept: dict[str, Any] = {}
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            kept[event] = groups
            continue
        new_groups = []
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list):
                new_groups.append(group)
                continue
            others = [h for h in inner if not (isinstance(h, dict) and _ours(h))]
            removed += len(inner) - len(others)
            if others or not inner:
                new_groups.append({**group, "hooks": others})
        if new_groups:
            kept[event] = new_groups
    return kept, removed


def _ours(hook: dict[str, Any]) -> bool:
    command = hook.get("command")
    return isinstance(command, str) and MARKER in command


def install(path: Path, agent: str, command: str) -> dict[str, Any]:
    """Write mnesis's hooks into ``path`` (replacing earlier ones); returns the file's
    new content."""
    data = _read(path)
    hooks, _ = _without_ours(data.get("hooks", {}))
    for event, groups in entries(agent, command).items():
        hooks[event] = [*hooks.get(event, []), *groups]
    data["hooks"] = hooks
    _write(path, data)
    return data


def uninstall(path: Path) -> int:
    """Remove mnesis's hooks from ``path``; returns how many were removed."""
    data = _read(path)
    if not data:
        return 0
    hooks, removed = _without_ours(data.get("hooks", {}))
    if removed:
        data["hooks"] = hooks
        _write(path, data)
    return removed

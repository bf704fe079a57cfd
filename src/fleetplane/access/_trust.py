"""Which plugin file is run, and whether it can be trusted (KEP-4322 "plugin poisoning").

The plugin runs with the controller's identity, so whoever can choose or replace the file it runs
can act as the controller. Two rules, checked every time before a plugin starts:

* **No command relative to the working directory.** A command is an absolute path, or a bare name
  looked up in ``$PATH`` where only absolute entries count: an empty entry or ``.`` (or any other
  relative entry) would find a file in whatever directory the controller happens to run in, so
  such entries are skipped, and a name found only there is refused with Go's ``ErrDot`` text
  (Go's ``os/exec`` refuses such a lookup since Go 1.19; client-go plugins are found the same
  way). A relative path with a ``/`` (``./plugin``, ``bin/plugin``) is refused for the same reason.
* **No file others could have replaced.** The resolved file and every directory above it (of the
  path as written and of its symlink-free form) must be owned by root or by the controller's user
  and not writable by group or others; a group- or world-writable directory is accepted only with
  the sticky bit (``/tmp``), where others cannot rename or delete entries they do not own. The
  provider file's ``insecureSkipPluginPermissionCheck: true`` turns this rule off for one provider.

Both raise :class:`UntrustedPlugin` with a sentence saying what is wrong and how to fix it.
"""

from __future__ import annotations

import os
import stat

__all__ = ["UntrustedPlugin", "check_permissions", "resolve_command"]

#: Go's ``exec.ErrDot`` text.
ERR_DOT = "cannot run executable found relative to current directory"
OPT_OUT = 'set "insecureSkipPluginPermissionCheck": true on the provider to skip this check'


class UntrustedPlugin(Exception):
    """The command may not be run; ``args[0]`` says why."""


def resolve_command(command: str) -> str:
    """The absolute path of the executable for ``command`` (Go's ``exec.LookPath`` with ErrDot).

    Raises ``FileNotFoundError``/``PermissionError`` (reason in ``args[0]``) as before, and
    :class:`UntrustedPlugin` for a command relative to the working directory.
    """
    if os.sep in command or (os.altsep and os.altsep in command):
        if not os.path.isabs(command):
            raise UntrustedPlugin(
                f"{ERR_DOT}: {command!r} is a relative path; use an absolute path or a bare name found in $PATH"
            )
        try:
            st = os.stat(command)
        except FileNotFoundError:
            raise FileNotFoundError("no such file") from None
        except OSError as e:
            raise PermissionError(e.strerror or str(e)) from None
        if stat.S_ISDIR(st.st_mode):
            raise PermissionError("is a directory")
        if not os.access(command, os.X_OK):
            raise PermissionError("permission denied (not executable)")
        return command
    if command in ("", ".", ".."):  # Go's validateLookPath
        raise FileNotFoundError("not a valid executable name")
    found_not_exec = False
    relative_hit: str | None = None
    for d in os.environ.get("PATH", os.defpath).split(os.pathsep):
        cand = os.path.join(d or ".", command)
        try:
            st = os.stat(cand)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        if not os.access(cand, os.X_OK):
            found_not_exec = True
            continue
        if not os.path.isabs(cand):
            # skipped, never run: what it finds depends on the working directory's content. Go
            # returns ErrDot here; skipping also keeps a file dropped there from masking the real one.
            relative_hit = relative_hit or d or "(empty entry)"
            continue
        return cand
    if relative_hit is not None:
        raise UntrustedPlugin(
            f"{ERR_DOT}: found in the relative $PATH entry {relative_hit!r}; "
            "remove relative and empty entries from $PATH or use an absolute path"
        )
    if found_not_exec:
        raise PermissionError("found in $PATH but not executable")
    raise FileNotFoundError("not found in $PATH")


def _trusted_owner(uid: int) -> bool:
    return uid == 0 or uid == os.geteuid()


def _check_one(path: str, *, is_dir: bool) -> None:
    try:
        st = os.lstat(path)
    except OSError as e:
        raise UntrustedPlugin(f"cannot check {path}: {e.strerror or e}") from None
    what = "directory" if is_dir else "file"
    if stat.S_ISLNK(st.st_mode):
        # a symlink's own mode is meaningless; only its owner (who may re-point it) matters
        if not _trusted_owner(st.st_uid):
            raise UntrustedPlugin(
                f"the symlink {path} is owned by uid {st.st_uid}, who could re-point it; {OPT_OUT}"
            )
        return
    if not _trusted_owner(st.st_uid):
        raise UntrustedPlugin(
            f"the {what} {path} is owned by uid {st.st_uid}, neither root nor this process's user "
            f"(uid {os.geteuid()}), who could replace the plugin; {OPT_OUT}"
        )
    writable = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if writable and not (is_dir and st.st_mode & stat.S_ISVTX):
        who = "group and others" if writable == (stat.S_IWGRP | stat.S_IWOTH) else (
            "its group" if writable & stat.S_IWGRP else "others")
        raise UntrustedPlugin(
            f"the {what} {path} (mode {stat.S_IMODE(st.st_mode):04o}) is writable by {who}, who could "
            f"replace the plugin; run chmod go-w {path}, or {OPT_OUT}"
        )


def _chain(path: str) -> list[str]:
    """``path`` and every directory above it, the file first."""
    out = [path]
    d = os.path.dirname(path)
    while True:
        out.append(d)
        parent = os.path.dirname(d)
        if parent == d:
            return out
        d = parent


def _interpreter(path: str) -> str | None:
    """The absolute interpreter of a ``#!`` script (which runs the plugin as much as the script does)."""
    try:
        with open(path, "rb") as f:
            head = f.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].split()
    if not words:
        return None
    interp = os.fsdecode(words[0])
    return interp if os.path.isabs(interp) else None


def check_permissions(path: str) -> None:
    """Refuse a plugin file that others than its owner or root could have replaced (see module doc).

    A ``#!`` script's interpreter is checked the same way (``/usr/bin/env python3`` checks ``env``
    only: what it then finds depends on ``$PATH``, the controller's own).
    """
    seen: set[str] = set()
    todo = [path]
    interp = _interpreter(path)
    if interp is not None:
        todo.append(interp)
    for target in todo:
        lexical = os.path.abspath(target)
        for chain in (_chain(lexical), _chain(os.path.realpath(lexical))):
            for i, p in enumerate(chain):
                if p in seen:
                    continue
                seen.add(p)
                _check_one(p, is_dir=i > 0)

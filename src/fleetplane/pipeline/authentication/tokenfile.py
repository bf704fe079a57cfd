"""Static bearer tokens from a CSV file in kube's ``--token-auth-file`` format.

``token,user,uid[,"group1,group2"]``: at least three columns; a row with an empty token is
skipped; a repeated token keeps the last row (kube warns, and so do we).
"""

from __future__ import annotations

import csv
import logging
from pathlib import Path

from ..user import UserInfo
from .chain import StaticTokens

log = logging.getLogger(__name__)


def load_token_file(path: str | Path) -> StaticTokens:
    """The users of a token file, as a token authenticator."""
    users: dict[str, UserInfo] = {}
    with open(path, newline="") as f:
        for lineno, row in enumerate(csv.reader(f), start=1):
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            if len(row) < 3:
                raise ValueError(f"token file '{path}' must have at least 3 columns (token, user name, user uid), found {len(row)}")
            token, name, uid = row[0].strip(), row[1].strip(), row[2].strip()
            if not token:
                continue
            groups = tuple(g.strip() for g in row[3].split(",") if g.strip()) if len(row) > 3 else ()
            if token in users:
                log.warning("token file %s: duplicate token on line %d, the last one wins", path, lineno)
            users[token] = UserInfo(name, uid, groups)
    return StaticTokens(users)

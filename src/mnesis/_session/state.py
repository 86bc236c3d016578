"""Whether a session is still open, shared by the facade and its collaborators."""

from __future__ import annotations

from mnesis.errors import SessionClosedError

__all__ = ["OpenState"]


class OpenState:
    """The open/closed flag of one session."""

    def __init__(self, session_id: str) -> None:
        self._session_id = session_id
        self.closed = False

    def check_open(self) -> None:
        """Raise :class:`~mnesis.errors.SessionClosedError` once the session is closed."""
        if self.closed:
            raise SessionClosedError(
                f"session {self._session_id} is closed; load it again to continue"
            )

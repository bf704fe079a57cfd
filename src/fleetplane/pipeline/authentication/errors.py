"""The one authentication failure: a credential that is ours but invalid (a 401)."""


class AuthenticationError(Exception):
    """Its message is for logs and TokenReview's ``status.error``; it never holds the token."""

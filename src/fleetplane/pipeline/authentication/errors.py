"""The one authentication failure: a credential that is ours but invalid (a 401)."""


class AuthenticationError(Exception):
    """Its message is for logs and TokenReview's ``status.error``; it never holds the token."""


class ReferenceMissing(AuthenticationError):
    """The object a token names (its ServiceAccount or Secret) is not in the cache: deleted, or
    written a moment ago (through another replica) and not there yet."""

"""Exception hierarchy of :mod:`fleetplane.access`.

Every error raised by the library derives from :class:`AccessError`. Messages name the provider and,
where known, the ClusterProfile (``namespace/name``) or the cluster's server, and never contain
credential material: tokens, private keys and the plugin's raw standard output are never quoted.
"""

from __future__ import annotations


class AccessError(Exception):
    """Base class of every error raised by :mod:`fleetplane.access`."""


class ProviderFileError(AccessError, ValueError):
    """The provider file (``--clusterprofile-provider-file``) cannot be read or is invalid.

    ``provider`` names the offending provider entry when the problem is inside one.
    """

    def __init__(self, message: str, *, path: str | None = None, provider: str | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.provider = provider


class ProfileError(AccessError, ValueError):
    """A ClusterProfile cannot be turned into an access configuration.

    Raised for a malformed access provider entry (no server, bad CA data, duplicate extension names)
    or a bad ``additional-args`` / ``additional-envs`` extension payload.
    """

    def __init__(self, message: str, *, profile: str | None = None, provider: str | None = None) -> None:
        super().__init__(message)
        self.profile = profile
        self.provider = provider


class NoMatchingProviderError(ProfileError):
    """None of the configured providers is offered by the ClusterProfile."""


class ExecPluginError(AccessError):
    """Running the exec credential plugin failed.

    Attributes: ``provider`` (provider name), ``command`` (the configured command) and ``server``
    (the cluster the credential was for).
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        command: str | None = None,
        server: str | None = None,
    ) -> None:
        super().__init__(message)
        self.provider = provider
        self.command = command
        self.server = server


class ExecNotFoundError(ExecPluginError):
    """The plugin executable does not exist (the message carries the provider's ``installHint``)."""


class ExecNotExecutableError(ExecPluginError):
    """The plugin path exists but cannot be executed (permissions, not a regular file, bad interpreter)."""


class ExecUntrustedError(ExecNotExecutableError):
    """The plugin is refused before it runs: a command relative to the working directory (Go's
    ``exec.ErrDot``), or a file or directory others than its owner or root could have replaced."""


class ExecFailedError(ExecPluginError):
    """The plugin exited with a non-zero status. ``exit_code`` and the (redacted) ``stderr`` are kept."""

    def __init__(self, message: str, *, exit_code: int, stderr: str = "", **kwargs) -> None:
        super().__init__(message, **kwargs)
        self.exit_code = exit_code
        self.stderr = stderr


class ExecTimeoutError(ExecPluginError):
    """The plugin did not finish within the exec timeout; its process group was killed."""


class ExecOutputError(ExecPluginError):
    """The plugin's output is not a valid ExecCredential (garbage, wrong apiVersion, missing status...)."""


class ExecInteractiveError(ExecPluginError):
    """The provider requires an interactive plugin (``interactiveMode: Always``) and there is no terminal."""


class SecretAccessError(AccessError):
    """Secret-based access failed: no matching Secret, several matching Secrets, or a bad kubeconfig."""

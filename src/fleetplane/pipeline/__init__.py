"""The request pipeline every request passes, in kube-apiserver's order.

``authentication`` (who is asking) -> ``impersonation`` (who they act as) ->
``authorization`` (may they) -> the resource handlers -> ``admission`` (an ordered chain of
plugins run by the generic store on every write path: create, update, patch, apply, delete,
delete-collection, subresources and dry-run alike) -> per-resource storage.

Each stage is its own module and knows nothing of HTTP beyond :class:`.user.UserInfo` and
:class:`.authorization.attributes.Attributes`; ``server.filters`` strings them together.
"""

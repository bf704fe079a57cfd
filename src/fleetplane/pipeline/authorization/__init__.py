"""Authorization: may this user do this here? ``system:masters`` first, then RBAC."""

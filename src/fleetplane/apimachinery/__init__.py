"""The basics every layer shares, as k8s.io/apimachinery is kube's: errors, labels, fields,
quantity, intstr, metatime, validation, jsonpath, gofmt, jsonvalue (one module per concept).

Nothing here imports the rest of fleetplane, so any layer (and any controller) can use it.
"""

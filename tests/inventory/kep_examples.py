"""Every YAML example of KEP-4322 (keps/sig-multicluster/4322-cluster-inventory), verbatim.

Copied character for character from the KEP text (only the indentation the bullet list added
to the first line of the last three is removed). Two of them elide parts with ``...`` and are
therefore not valid YAML; ``*_COMPLETED`` fills in exactly the elided parts and nothing else.
"""

from __future__ import annotations

#: KEP-4322 "API Example".
API_EXAMPLE = """\
apiVersion: multicluster.x-k8s.io/v1alpha1
kind: ClusterProfile
metadata:
 name: generated-cluster-name
 labels:
   x-k8s.io/cluster-manager: some-cluster-manager
spec:
  displayName: cluster-us-east
  clusterManager:
    name: some-cluster-manager
status:
  version:
    kubernetes: 1.28.0
  properties:
   - name: clusterset.k8s.io
     value: some-clusterset
   - name: location
     value: apac
  conditions:
   - type: ControlPlaneHealthy
     status: True
     lastTransitionTime: "2023-05-08T07:56:55Z"
     message: ""
   - type: Joined
     status: True
     lastTransitionTime: "2023-05-08T07:58:55Z"
     message: ""
"""

#: KEP-4322 "API Examples with Access Providers": the GKE profile (access provider "google").
GKE_EXAMPLE = """\
apiVersion: multicluster.x-k8s.io/v1alpha1
kind: ClusterProfile
metadata:
 name: my-cluster-1
spec:
  displayName: my-cluster-1
  clusterManager:
    name: GKE-Fleet
status:
  version:
    kubernetes: 1.28.0
  properties:
   - name: clusterset.k8s.io
     value: some-clusterset
   - name: location
     value: us-central1
  accessProviders:
  - name: google
    cluster:
      server: https://connectgateway.googleapis.com/v1/projects/123456789/locations/us-central1/gkeMemberships/my-cluster-1
"""

#: KEP-4322: the reserved client.authentication.k8s.io/exec extension (secretreader).
EXEC_EXTENSION_EXAMPLE = """\
apiVersion: multicluster.x-k8s.io/v1alpha1
kind: ClusterProfile
metadata:
  name: my-cluster-1
spec:
  displayName: my-cluster-1
  clusterManager:
    name: inhouse-manager
status:
  accessProviders:
  - name: secretreader
    cluster:
      server: https://<spoke-server>
      certificate-authority-data: <BASE64_CA>
      extensions:
      - name: client.authentication.k8s.io/exec
        extension:
          clusterName: spoke-1
"""

#: KEP-4322: the .../exec/additional-args extension (spire-agent). Elided with "...": not valid YAML.
ADDITIONAL_ARGS_EXAMPLE = """\
apiVersion: multicluster.x-k8s.io/v1alpha1
kind: ClusterProfile
metadata:
  name: my-on-prem-cluster
spec: ...
status:
  ...
  accessProviders:
  - name: spire-agent
    cluster:
      server: https://my-on-prem-k8s.example.dev
      ...
      extensions:
      - name: "clusterprofiles.multicluster.x-k8s.io/exec/additional-args"
        extension:
        - "-audience"
        - "https://my-on-prem-k8s.example.dev"
"""

#: KEP-4322: the .../exec/additional-envs extension (kubelogin). Elided with "...": not valid YAML.
ADDITIONAL_ENVS_EXAMPLE = """\
apiVersion: multicluster.x-k8s.io/v1alpha1
kind: ClusterProfile
metadata:
 name: my-aks-cluster
spec: ...
status:
  ...
  accessProviders:
  - name: kubelogin
    cluster:
      server: https://braveion-abcxyz.hcp.eastus2.azmk8s.io
      ...
      extensions:
      - name: "clusterprofiles.multicluster.x-k8s.io/exec/additional-envs"
        extension:
          "CLIENT_ID": "my-client-id"
          "TENANT_ID": "my-tenant-id"
"""

#: KEP-4322: "Example (embedded in ClusterProfile.status.accessProviders[].cluster)".
EXTENSIONS_FRAGMENT = """\
extensions:
- name: client.authentication.k8s.io/exec
  extension:
    clusterName: spoke-1
"""

#: ADDITIONAL_ARGS_EXAMPLE with its elisions filled in (a spec; the other status and cluster fields left out).
ADDITIONAL_ARGS_EXAMPLE_COMPLETED = """\
apiVersion: multicluster.x-k8s.io/v1alpha1
kind: ClusterProfile
metadata:
  name: my-on-prem-cluster
spec:
  displayName: my-on-prem-cluster
  clusterManager:
    name: inhouse-manager
status:
  accessProviders:
  - name: spire-agent
    cluster:
      server: https://my-on-prem-k8s.example.dev
      extensions:
      - name: "clusterprofiles.multicluster.x-k8s.io/exec/additional-args"
        extension:
        - "-audience"
        - "https://my-on-prem-k8s.example.dev"
"""

#: ADDITIONAL_ENVS_EXAMPLE with its elisions filled in (a spec; the other status and cluster fields left out).
ADDITIONAL_ENVS_EXAMPLE_COMPLETED = """\
apiVersion: multicluster.x-k8s.io/v1alpha1
kind: ClusterProfile
metadata:
 name: my-aks-cluster
spec:
  displayName: my-aks-cluster
  clusterManager:
    name: inhouse-manager
status:
  accessProviders:
  - name: kubelogin
    cluster:
      server: https://braveion-abcxyz.hcp.eastus2.azmk8s.io
      extensions:
      - name: "clusterprofiles.multicluster.x-k8s.io/exec/additional-envs"
        extension:
          "CLIENT_ID": "my-client-id"
          "TENANT_ID": "my-tenant-id"
"""

#: The complete ClusterProfile examples as the KEP gives them.
VALID_EXAMPLES = {
    "api-example": API_EXAMPLE,
    "gke": GKE_EXAMPLE,
    "exec-extension": EXEC_EXTENSION_EXAMPLE,
}
#: The elided examples: as given, and completed.
ELIDED_EXAMPLES = {
    "additional-args": (ADDITIONAL_ARGS_EXAMPLE, ADDITIONAL_ARGS_EXAMPLE_COMPLETED),
    "additional-envs": (ADDITIONAL_ENVS_EXAMPLE, ADDITIONAL_ENVS_EXAMPLE_COMPLETED),
}
#: Every whole-object example, completed where needed.
ALL_PROFILES = {**VALID_EXAMPLES, **{k: v[1] for k, v in ELIDED_EXAMPLES.items()}}

"""Selection by labels, properties, ClusterSet, installed CRDs, location and readiness (KEP-4322's scheduler stories)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import yaml

from fleetplane.inventory import (
    ClusterProfile,
    ProfileSelector,
    PropertyRequirement,
    parse_property_selector,
    select,
)

from . import kep_examples as kep

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def make(name: str, ns: str = "fleet", labels: dict | None = None, props: dict | None = None, ready: bool | None = None,
         manager: str = "mgr") -> ClusterProfile:
    cp = ClusterProfile.new(name, manager, namespace=ns, labels=labels)
    for k, v in (props or {}).items():
        cp.set_property(k, v)
    if ready is not None:
        cp.set_condition("ControlPlaneHealthy", ready, "Probe", now=T0)
    return cp


@pytest.fixture
def fleet() -> list[ClusterProfile]:
    return [
        make("eks-use1", labels={"env": "prod", "platform": "eks"},
             props={"location": "us-east-1", "platform": "eks", "crd.fleetplane.io/widgets.example.com": "v1",
                    "nodes": "12"}, ready=True),
        make("eks-usw2", labels={"env": "prod", "platform": "eks"},
             props={"topology.kubernetes.io/region": "us-west-2", "platform": "eks", "nodes": "3"}, ready=False),
        make("onprem-1", ns="onprem", labels={"env": "on-prem"},
             props={"location": "dc-1", "crd.fleetplane.io/widgets.example.com": "v1beta1,v1", "clusterset.k8s.io": "edge"},
             ready=True),
        make("gke-1", labels={"env": "dev"}, props={"topology.kubernetes.io/zone": "us-central1-a"}, manager="gke-fleet"),
    ]


def names(items) -> list[str]:
    return [p.name if isinstance(p, ClusterProfile) else p["metadata"]["name"] for p in items]


def test_eks_in_us_east_1(fleet) -> None:
    assert names(select(fleet, location="us-east-1", properties="platform=eks")) == ["eks-use1"]
    assert names(select(fleet, location="us-west-2")) == ["eks-usw2"]  # topology.kubernetes.io/region
    assert names(select(fleet, location="us-central1-a")) == ["gke-1"]  # ... and zone


def test_installed_crds(fleet) -> None:
    assert names(select(fleet, crds=["widgets.example.com"])) == ["eks-use1", "onprem-1"]
    assert names(select(fleet, crds=["widgets.example.com@v1beta1"])) == ["onprem-1"]
    assert names(select(fleet, crds=["widgets.example.com", "gadgets.example.com"])) == []


def test_labels(fleet) -> None:
    assert names(select(fleet, labels="env=on-prem")) == ["onprem-1"]
    assert names(select(fleet, labels="env in (prod,dev),platform!=eks")) == ["gke-1"]
    assert names(select(fleet, labels={"matchLabels": {"env": "prod"},
                                       "matchExpressions": [{"key": "platform", "operator": "Exists"}]})) == ["eks-use1", "eks-usw2"]
    assert names(select(fleet, labels="x-k8s.io/cluster-manager=gke-fleet")) == ["gke-1"]
    with pytest.raises(ValueError):
        select(fleet, labels="env in prod")


def test_ready_and_managers(fleet) -> None:
    assert names(select(fleet, ready=True)) == ["eks-use1", "onprem-1"]
    assert names(select(fleet, ready=False)) == ["eks-usw2", "gke-1"]
    assert names(select(fleet, managers=["gke-fleet"])) == ["gke-1"]


def test_clusterset_by_namespace_label_property_or_label(fleet) -> None:
    ns_labels = {"fleet": {"multicluster.x-k8s.io/clusterset": "prod"}, "onprem": {}}
    assert names(select(fleet, clusterset="prod", namespace_labels=ns_labels)) == ["eks-use1", "eks-usw2", "gke-1"]
    assert names(select(fleet, clusterset="edge", namespace_labels=ns_labels)) == ["onprem-1"]
    assert names(select(fleet, clusterset="prod")) == []  # without namespace labels only the profile itself speaks
    fleet[3].labels["clusterset.multicluster.x-k8s.io"] = "dev"
    assert names(select(fleet, clusterset="dev")) == ["gke-1"]
    assert names(select(fleet, clusterset="prod", namespace_labels=lambda ns: {"clusterset.multicluster.x-k8s.io": "prod"}
                        if ns == "fleet" else {})) == ["eks-use1", "eks-usw2", "gke-1"]


def test_property_selector_syntax(fleet) -> None:
    assert names(select(fleet, properties="nodes>5")) == ["eks-use1"]
    assert names(select(fleet, properties="nodes<5")) == ["eks-usw2"]
    assert names(select(fleet, properties="location in (us-east-1, dc-1)")) == ["eks-use1", "onprem-1"]
    assert names(select(fleet, properties="location notin (dc-1)")) == ["eks-use1", "eks-usw2", "gke-1"]
    assert names(select(fleet, properties="!location,platform")) == ["eks-usw2"]
    assert names(select(fleet, properties="crd.fleetplane.io/widgets.example.com==v1")) == ["eks-use1"]
    assert parse_property_selector("a=b, c != d,e,!f,g in (h,i),n>3") == [
        PropertyRequirement("a", "In", ("b",)), PropertyRequirement("c", "NotIn", ("d",)), PropertyRequirement("e"),
        PropertyRequirement("f", "DoesNotExist"), PropertyRequirement("g", "In", ("h", "i")), PropertyRequirement("n", "Gt", ("3",))]
    assert parse_property_selector("") == []
    for bad in ("a=", "a b", "a in b", "=a", "a>x"):
        with pytest.raises(ValueError):
            parse_property_selector(bad)
    with pytest.raises(ValueError):
        PropertyRequirement("a", "Near")


def test_dicts_in_dicts_out() -> None:
    docs = [yaml.safe_load(kep.API_EXAMPLE), yaml.safe_load(kep.GKE_EXAMPLE)]
    out = select(docs, properties="location=apac")
    assert out == [docs[0]] and out[0] is docs[0]
    assert select(docs, clusterset="some-clusterset") == docs
    assert select(docs, ready=True) == [docs[0]]  # the KEP example's ControlPlaneHealthy is True


def test_reusable_selector(fleet) -> None:
    sel = ProfileSelector(labels="env=prod", ready=True)
    assert names(sel.select(fleet)) == ["eks-use1"]
    assert sel.matches(fleet[0]) and not sel.matches(fleet[1])

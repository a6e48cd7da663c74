"""NetApp's own ONTAP client (netapp-ontap) against a qoslab node, validation on.

Run by the integration test `ontap_rest::netapp_ontap_client_drives_the_api`:
    python3 ontap_client.py HOST PORT CA_FILE USER PASSWORD
Every call listed in issue 14 is made with the library's defaults (ENABLE_VALIDATIONS,
enum checks on every field it reads back) over HTTPS, verifying the node's certificate
against CA_FILE. Prints one line per check and "ok: N checks" at the end; any failure
raises (non-zero exit).
"""

import sys

from netapp_ontap import HostConnection, config
from netapp_ontap.error import NetAppRestError
from netapp_ontap.resources import Cluster, QosPolicy, Svm, Volume

host, port, ca, user, password = sys.argv[1:6]
assert config.ENABLE_VALIDATIONS, "validation must be on (the library's default)"
config.CONNECTION = HostConnection(
    host, username=user, password=password, verify=ca, port=int(port)
)
checks = 0


def check(what, cond, detail=""):
    global checks
    if not cond:
        raise AssertionError(f"{what}: {detail}")
    checks += 1
    print(f"ok {what}")


GB = 1000**3

# Cluster and SVMs.
c = Cluster()
c.get()
check("Cluster.get", c.name == "qoslab" and c.version.full.startswith("qoslab"), c)
svms = list(Svm.get_collection(fields="*"))
check("Svm.get_collection", any(s.name == "qoslab" for s in svms), svms)

# Fixed QoS policy: post, get, get_collection(fields='*'), find, patch, delete.
p = QosPolicy(
    name="QoS_500iops",
    svm={"name": "nfs_svm", "uuid": "2829ebfb-4d6a-11e8-a5dc-005056b08451"},
    fixed={"capacity_shared": False, "max_throughput_iops": 500},
)
p.post(hydrate=True)
check("QosPolicy.post(hydrate)", p.uuid and p.fixed.max_throughput_iops == 500, p)
g = QosPolicy(uuid=p.uuid)
g.get()
check("QosPolicy.get", g.name == "QoS_500iops" and g.svm.name == "nfs_svm", g)
allp = list(QosPolicy.get_collection(fields="*"))
check(
    "QosPolicy.get_collection(fields='*')",
    {"extreme", "performance", "value", "QoS_500iops"} <= {x.name for x in allp},
    allp,
)
f = QosPolicy.find(name="QoS_500iops")
check("QosPolicy.find", f is not None and f.uuid == p.uuid, f)
f.fixed.max_throughput_iops = 1000
f.patch()
g.get()
check("QosPolicy.patch", g.fixed.max_throughput_iops == 1000, g)

# Adaptive policy: the seed's aQoS.
a = QosPolicy(
    name="aQoS",
    svm={"name": "nfs_svm"},
    adaptive={
        "expected_iops": 5000,
        "peak_iops": 50000,
        "peak_iops_allocation": "allocated_space",
    },
)
a.post(hydrate=True)
check(
    "QosPolicy.post adaptive",
    a.adaptive.peak_iops == 50000 and a.adaptive.peak_iops_allocation == "allocated_space",
    a,
)
a.adaptive.peak_iops = 60000
a.patch()
a2 = QosPolicy.find(name="aQoS", fields="adaptive")
check("QosPolicy.patch adaptive", a2.adaptive.peak_iops == 60000, a2)

# Volumes, the way ONTAP scripts create them: svm and aggregates.
v = Volume(
    name="epic_rhel1_a",
    svm={"name": "epic"},
    aggregates=[{"name": "aggr1"}],
    size=100 * GB,
    qos={"policy": {"name": "QoS_500iops"}},
)
v.post(hydrate=True)
check(
    "Volume.post(hydrate) with svm and aggregates",
    v.uuid and v.size == 100 * GB and v.svm.name == "epic" and v.state == "online",
    v,
)
for n in ["epic_rhel1_b", "epic_rhel2_a", "other"]:
    Volume(name=n, svm={"name": "epic"}, aggregates=[{"name": "aggr1"}], size=1 * GB).post()
check("Volume.post", Volume.find(name="other") is not None)
vg = Volume(uuid=v.uuid)
vg.get()
check("Volume.get (full record, metric and statistics)", vg.qos.policy.name == "QoS_500iops"
      and vg.metric.status == "ok" and vg.statistics.iops_raw.total >= 0, vg)
vf = Volume.find(name="epic_rhel1_a")
check("Volume.find", vf.uuid == v.uuid, vf)
vf.size = 200 * GB
vf.qos = {"policy": {"name": "aQoS"}}
vf.patch()
vg.get()
check("Volume.patch size and qos policy", vg.size == 200 * GB and vg.qos.policy.name == "aQoS", vg)
full = list(Volume.get_collection(fields="*"))
check("Volume.get_collection(fields='*')", len(full) == 5, full)

# ONTAP's list query operators.
big = list(Volume.get_collection(size=">1000000000"))
check("query size=>1GB", {x.name for x in big} == {"epic_rhel1_a", "vol1"}, big)
check("query <=", len(list(Volume.get_collection(size="<=1000000000"))) == 3)
check("query range ..", len(list(Volume.get_collection(size="1..1000000000"))) == 3)
check("query wildcard", len(list(Volume.get_collection(name="epic_*"))) == 3)
check("query alternatives", len(list(Volume.get_collection(name="other|vol1"))) == 2)
check("query negation", len(list(Volume.get_collection(name="!epic_*"))) == 2)
try:
    list(Volume.get_collection(name=">a"))
    raise AssertionError("a numeric operator on a string field must be a 400")
except NetAppRestError as e:
    check("unsupported operator is a 400 naming it", e.http_err_response.http_response.status_code == 400
          and '">"' in str(e), e)

# order_by, max_records with _links.next (the library follows it), return_records=false.
names = [x.name for x in Volume.get_collection(order_by="size desc,name", max_records=2)]
check("order_by + max_records paging", names == ["epic_rhel1_a", "vol1", "epic_rhel1_b", "epic_rhel2_a", "other"], names)
check("count_collection (return_records=false)", Volume.count_collection(name="epic_*") == 3)

# PATCH and DELETE by query.
Volume.patch_collection({"qos": {"policy": {"name": "aQoS"}}}, name="epic_rhel1_*")
pol = {x.name: x.qos.policy.name for x in Volume.get_collection(name="epic_rhel1_*", fields="qos")}
check("Volume.patch_collection by query", pol == {"epic_rhel1_a": "aQoS", "epic_rhel1_b": "aQoS"}, pol)
Volume.delete_collection(name="epic_rhel2_*|other")
left = sorted(x.name for x in Volume.get_collection())
check("Volume.delete_collection by query", left == ["epic_rhel1_a", "epic_rhel1_b", "vol1"], left)

# Deletes.
for x in Volume.get_collection(name="epic_*"):
    x.delete()
check("Volume.delete", Volume.find(name="epic_rhel1_a") is None)
QosPolicy(uuid=p.uuid).delete()
a2.delete()
check("QosPolicy.delete", QosPolicy.find(name="QoS_500iops") is None and QosPolicy.find(name="aQoS") is None)
print(f"ok: {checks} checks")

"""The Kubernetes files of deploy/k8s/ hold together, without a cluster.

Every file parses as YAML objects with a kind and a name; every Service selects the pods of a
workload, every StatefulSet's serviceName is a Service, every volume claim and Secret a pod uses
is declared or created by a command the files' comments give; the coordinators run as a 2-replica
Deployment on the shared PostgreSQL store, each under its pod's name, ready by /health. The
container commands are run for real with --help (the image's /etc/arbor/*.flags being deploy/'s,
as deploy/Dockerfile copies them, and the environment's values filled in): the Arbor binaries
and smg accept every flag they name. Run by ctest with the project virtualenv;
ARBOR_BINARY_DIR points at the build.
"""

import glob
import os
import re
import shlex
import subprocess
import sys
import unittest

try:
    import yaml
    from smg.launch_router import parse_router_args
except ImportError as e:  # The dependency script installs both; without them nothing to test.
    print(f"{e.name} is not installed in this Python; skipping")
    sys.exit(77)

SRC = os.environ.get("ARBOR_SOURCE_DIR",
                     os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BIN = os.path.join(os.environ.get("ARBOR_BINARY_DIR", "build"), "bin")
K8S = os.path.join(SRC, "deploy", "k8s")
WORKLOADS = ("Deployment", "StatefulSet")
# What the environment gives a container, by the kind of source its value has.
SAMPLE_VALUES = {"fieldRef": "arbor-coordinator-6d9f7-x2x4z",
                 "secretKeyRef": "host=arbor-postgres port=5432 user=arbor dbname=arbor"}


def load():
    """{file name: [objects]} of deploy/k8s/*.yaml, and all their comment text."""
    objects, comments = {}, ""
    for path in sorted(glob.glob(os.path.join(K8S, "*.yaml"))):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        objects[os.path.basename(path)] = [o for o in yaml.safe_load_all(text) if o]
        comments += "\n".join(line for line in text.splitlines() if line.lstrip().startswith("#"))
    return objects, comments


def containers(workload):
    return workload["spec"]["template"]["spec"]["containers"]


def argv(container):
    """The container's command as the process gets it: `sh -c` expanded with sample values of
    its environment, the image's flag files mapped to deploy/'s."""
    command = container["command"]
    if command[:2] == ["sh", "-c"]:
        env = {e["name"]: e.get("value") or SAMPLE_VALUES[next(iter(e["valueFrom"]))]
               for e in container.get("env", [])}
        script = re.sub(r"\$\{(\w+)\}", lambda m: env[m.group(1)], command[2])
        command = shlex.split(script)
        if command[0] == "exec":
            command = command[1:]
    return [word.replace("/etc/arbor/", os.path.join(SRC, "deploy") + "/") for word in command]


class DeployK8sTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.files, cls.comments = load()
        cls.all = [o for objects in cls.files.values() for o in objects]

    def of_kind(self, *kinds):
        return [o for o in self.all if o["kind"] in kinds]

    def test_every_object_has_a_kind_and_a_name(self):
        self.assertGreaterEqual(set(self.files), {"coordinator.yaml", "workers.yaml",
                                                  "models.yaml", "job-store.yaml",
                                                  "gateway.yaml"})
        for name, objects in self.files.items():
            self.assertTrue(objects, name)
            for o in objects:
                self.assertTrue(o.get("apiVersion") and o.get("kind"), (name, o))
                self.assertTrue(o.get("metadata", {}).get("name"), (name, o))

    def test_services_claims_and_secrets_are_all_there(self):
        workloads = self.of_kind(*WORKLOADS)
        labels = [w["spec"]["template"]["metadata"]["labels"] for w in workloads]
        services = {s["metadata"]["name"] for s in self.of_kind("Service")}
        for service in self.of_kind("Service"):
            selector = service["spec"]["selector"]
            self.assertTrue(any(selector.items() <= l.items() for l in labels), service)
        claims = {c["metadata"]["name"] for c in self.of_kind("PersistentVolumeClaim")}
        for w in workloads:
            self.assertEqual(w["spec"]["selector"]["matchLabels"].items()
                             - w["spec"]["template"]["metadata"]["labels"].items(), set())
            if w["kind"] == "StatefulSet":
                self.assertIn(w["spec"]["serviceName"], services)
            pod = w["spec"]["template"]["spec"]
            secrets = {v["secret"]["secretName"] for v in pod.get("volumes", []) if "secret" in v}
            for c in pod["containers"]:
                secrets |= {e["valueFrom"]["secretKeyRef"]["name"] for e in c.get("env", [])
                            if "secretKeyRef" in e.get("valueFrom", {})}
            for secret in secrets:
                self.assertIn(f"kubectl create secret generic {secret}", self.comments, secret)
            for v in pod.get("volumes", []):
                if "persistentVolumeClaim" in v:
                    self.assertIn(v["persistentVolumeClaim"]["claimName"], claims)

    def test_two_coordinators_share_the_store_each_under_its_pods_name(self):
        coordinator, = [w for w in self.of_kind("Deployment")
                        if w["metadata"]["name"] == "arbor-coordinator"]
        self.assertEqual(coordinator["spec"]["replicas"], 2)
        container, = containers(coordinator)
        env = {e["name"]: e for e in container["env"]}
        self.assertEqual(env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"], "metadata.name")
        command = argv(container)
        self.assertIn(f"--coordinator_id={SAMPLE_VALUES['fieldRef']}", command)
        self.assertIn(f"--job_store=postgres:{SAMPLE_VALUES['secretKeyRef']}", command)
        self.assertEqual(container["readinessProbe"]["httpGet"]["path"], "/health")

    def test_the_arbor_commands_name_only_known_flags_and_files(self):
        ran = set()
        for w in self.of_kind(*WORKLOADS):
            for c in containers(w):
                if "command" not in c:  # The image's own entry point (PostgreSQL's).
                    continue
                command = argv(c)
                if not command[0].startswith("arbor"):
                    continue
                for word in command:  # Flag files exist (in the image: deploy/ copied).
                    if word.startswith("--flagfile="):
                        self.assertTrue(os.path.exists(word.split("=", 1)[1]), word)
                run = subprocess.run([os.path.join(BIN, command[0]), *command[1:], "--help"],
                                     capture_output=True, text=True, timeout=60)
                self.assertEqual(run.returncode, 0, f"{command}:\n{run.stdout}{run.stderr}")
                self.assertNotIn("ERROR", run.stdout + run.stderr)
                ran.add(command[0])
        self.assertEqual(ran, {"arbor-coordinator", "arbor-worker"})

    def test_the_gateway_is_smg_over_the_coordinators_cache_aware(self):
        gateway, = [w for w in self.of_kind("Deployment")
                    if w["metadata"]["name"] == "arbor-gateway"]
        command = argv(containers(gateway)[0])
        self.assertEqual(command[:2], ["smg", "launch"])
        args = parse_router_args(command[2:])  # Exits (fails the test) on an unknown flag.
        self.assertEqual(args.policy, "cache_aware")
        self.assertEqual(args.selector, {"app": "arbor-coordinator"})
        self.assertEqual(args.service_discovery_port, 8000)
        self.assertEqual(args.health_check_endpoint, "/health")
        services = [s for s in self.of_kind("Service") if s["spec"]["selector"] ==
                    {"app": "arbor-gateway"}]
        self.assertEqual(len(services), 1)


if __name__ == "__main__":
    unittest.main()

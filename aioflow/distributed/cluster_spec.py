"""ClusterSpec: a cluster as jobs of tasks, each task a network address (TF 1.x's
tf.train.ClusterSpec, with its forms, accessors, errors and ClusterDef)."""

from __future__ import annotations

from aioflow.proto import cluster_pb2


class ClusterSpec:
    """The tasks of a cluster by job: `{"ps": ["h0:2222"], "worker": {1: "h2:2222"}}`,
    a ClusterDef, or another ClusterSpec. A job is a list (task i is its i-th address)
    or a sparse dict from task index to address."""

    def __init__(self, cluster):
        if isinstance(cluster, dict):
            self._cluster_spec = {job: _tasks_of(job, tasks) for job, tasks in cluster.items()}
            self._cluster_def = _make_cluster_def(self._cluster_spec)
        elif isinstance(cluster, (cluster_pb2.ClusterDef, ClusterSpec)):
            cluster_def = cluster_pb2.ClusterDef()
            cluster_def.MergeFrom(cluster if isinstance(cluster, cluster_pb2.ClusterDef)
                                  else cluster.as_cluster_def())
            self._cluster_def = cluster_def
            self._cluster_spec = {job.name: dict(job.tasks.items()) for job in cluster_def.job}
        else:
            raise TypeError("`cluster` must be a dictionary mapping one or more job names to "
                            "lists of network addresses, or a `ClusterDef` protocol buffer")

    def __bool__(self) -> bool:
        return bool(self._cluster_spec)

    def __eq__(self, other) -> bool:
        return self._cluster_spec == other

    def __ne__(self, other) -> bool:
        return self._cluster_spec != other

    __hash__ = None  # mutable-looking, as TF's (it defines __eq__ only)

    def __repr__(self) -> str:
        as_dict = self.as_dict()
        items = ", ".join(f"{k!r}: {as_dict[k]!r}" for k in sorted(as_dict))
        return "ClusterSpec({" + items + "})"

    def as_dict(self) -> dict:
        """Job name -> a list of addresses where the task indices are dense, else a dict
        from index to address ({} for a job without tasks)."""
        ret = {}
        for job in self.jobs:
            indices = self.task_indices(job)
            if not indices:
                ret[job] = {}
            elif max(indices) + 1 == len(indices):
                ret[job] = self.job_tasks(job)
            else:
                ret[job] = {i: self.task_address(job, i) for i in indices}
        return ret

    def as_cluster_def(self) -> cluster_pb2.ClusterDef:
        """The cluster as a ClusterDef (jobs sorted by name when made from a dict)."""
        return self._cluster_def

    @property
    def jobs(self) -> list[str]:
        """The job names, in the order they were given."""
        return list(self._cluster_spec.keys())

    def _job(self, job_name: str) -> dict:
        try:
            return self._cluster_spec[job_name]
        except KeyError:
            raise ValueError(f"No such job in cluster: {job_name!r}") from None

    def num_tasks(self, job_name: str) -> int:
        """How many tasks the job defines."""
        return len(self._job(job_name))

    def task_indices(self, job_name: str) -> list[int]:
        """The job's task indices, sorted."""
        return sorted(self._job(job_name).keys())

    def task_address(self, job_name: str, task_index: int) -> str:
        """The address of one task; ValueError naming the job or index when unknown."""
        job = self._job(job_name)
        try:
            return job[task_index]
        except KeyError:
            raise ValueError(f"No task with index {task_index!r} in job {job_name!r}") from None

    def job_tasks(self, job_name: str) -> list:
        """The job's addresses as a list by task index (None where a sparse job has no
        task)."""
        job = self._job(job_name)
        ret = [None] * (max(job.keys()) + 1)
        for i, address in job.items():
            ret[i] = address
        return ret

    def tasks(self) -> list[tuple[str, int, str]]:
        """Every (job, task index, address), jobs and tasks sorted (the cluster's order
        of devices)."""
        return [(job, i, address) for job in sorted(self._cluster_spec)
                for i, address in sorted(self._cluster_spec[job].items())]


def _tasks_of(job_name, tasks) -> dict[int, str]:
    if isinstance(tasks, (list, tuple)):
        return dict(enumerate(tasks))
    if isinstance(tasks, dict):
        return {int(i): address for i, address in tasks.items()}
    raise TypeError(f"The tasks for job {job_name!r} must be a list or a dictionary from "
                    f"integers to strings.")


def _as_text(value, what: str) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, str):
        return value
    raise TypeError(f"{what} {value!r} must be bytes or unicode")


def _make_cluster_def(cluster_spec: dict) -> cluster_pb2.ClusterDef:
    cluster_def = cluster_pb2.ClusterDef()
    for job_name, tasks in sorted(cluster_spec.items()):
        job_def = cluster_def.job.add()
        job_def.name = _as_text(job_name, "Job name")
        for i, address in sorted(tasks.items()):
            job_def.tasks[i] = _as_text(address, "Task address")
    return cluster_def


def task_prefix(job: str, task: int, replica: int = 0) -> str:
    """A task's device-name prefix, "/job:J/replica:R/task:T"."""
    return f"/job:{job}/replica:{replica}/task:{task}"


def task_of_device(device_name: str) -> str:
    """The task prefix of a full device name ("/job:J/replica:R/task:T/device:CPU:0"
    -> "/job:J/replica:R/task:T")."""
    return device_name[:device_name.index("/device:")]

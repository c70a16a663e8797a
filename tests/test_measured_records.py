"""One definition of the measured-capacity record, shared by instance files and cost models."""

from __future__ import annotations

import pydantic
import pytest

from costmodels.measured import MeasuredCapacity, capacities_from_melange
from placement.core.instance import schema


def test_instance_files_use_the_costmodels_record():
    assert schema.MeasuredCapacity is MeasuredCapacity
    inst_field = schema.Instance.model_fields["measured_capacity"].annotation
    assert inst_field == list[MeasuredCapacity]


def test_record_reads_the_instance_spelling_and_rejects_bad_values():
    c = MeasuredCapacity.model_validate({"chip": "a10g", "class": "chat", "max_rps_per_replica": 3})
    assert (c.traffic_class, c.chips, c.max_rps_per_chip) == ("chat", 1, 3.0)
    with pytest.raises(pydantic.ValidationError):
        MeasuredCapacity.model_validate({"chip": "a10g", "class": "chat", "max_rps_per_replica": 0})
    with pytest.raises(pydantic.ValidationError):
        MeasuredCapacity.model_validate({"chip": "a10g", "class": "chat", "max_rps_per_replica": 1, "x": 1})


def test_melange_buckets_a_gpu_cannot_serve_get_no_record():
    caps = capacities_from_melange({"gpus": {"L4": {"max_rps_per_gpu": [[2, 0]]}}})
    assert [(c.chip, c.traffic_class, c.max_rps_per_replica) for c in caps] == [("L4", "bucket_0_0", 2.0)]

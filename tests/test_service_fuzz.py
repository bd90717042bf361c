"""The verification service's OpenAPI document, fuzzed with schemathesis against the running
server: no generated request (valid per the document, or deliberately not) gets a 5xx, and
valid ones get a status and a body the document declares. Bounded to a few seconds."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.service_support import RunningService, example_bundle, example_contract, running_service
from tests.store_support import BACKENDS, store_target
from verdryx_core.addons.service import Client


@pytest.fixture(scope="module", params=BACKENDS)
def service(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningService]:
    """The server on a SQLite file, and on a fresh PostgreSQL schema (where TEXT cannot hold
    the NUL characters the fuzzer sends)."""
    with (
        store_target(request.param, tmp_path_factory.mktemp("fuzz")) as db,
        running_service(db) as running,
    ):
        yield running


@pytest.mark.slow
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_no_generated_request_gets_a_server_error(
    service: RunningService, mode: GenerationMode, tmp_path: Path
) -> None:
    key = service.new_key("fuzz")
    client = Client(api_key=key, base_url=service.url)
    contract_id = client.create_contract(example_contract())
    client.submit_run(contract_id, example_bundle())
    headers = {"Authorization": f"Bearer {key}"}
    # The document the server serves, as a client would load it.
    schema = schemathesis.openapi.from_url(f"{service.url}/openapi.json")
    checks = [not_a_server_error]
    if mode is GenerationMode.POSITIVE:
        checks += [status_code_conformance, content_type_conformance, response_schema_conformance]
    operations = [result.ok() for result in schema.get_all_operations()]
    assert {operation.label for operation in operations} >= {
        "POST /v1/contracts",
        "POST /v1/contracts/{contract_id}/runs",
        "GET /v1/contracts/{contract_id}/verdict",
        "GET /v1/verdicts",
    }
    statuses: set[int] = set()
    for operation in operations:
        # Half the path ids are the real contract's, so the runs endpoint gets past its 404.
        for path_parameters in ({"contract_id": contract_id}, None):
            if path_parameters and "{contract_id}" not in operation.path:
                continue
            strategy = operation.as_strategy(generation_mode=mode, path_parameters=path_parameters)

            @given(case=strategy)
            @settings(
                max_examples=12,
                deadline=None,
                derandomize=True,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            def fuzz(case: schemathesis.Case) -> None:
                response = case.call(base_url=service.url, headers=headers, timeout=30)
                statuses.add(response.status_code)
                assert response.status_code < 500, (case.method, case.path, response.text[:300])
                case.validate_response(response, checks=checks)

            try:
                fuzz()
            except Unsatisfiable:
                # Nothing here to make invalid (no body, no parameter left free): no case.
                assert mode is GenerationMode.NEGATIVE
    assert all(status < 500 for status in statuses)
    if mode is GenerationMode.POSITIVE:
        # The fuzzing reached past authentication and validation: it saw successes too.
        assert statuses & {200, 201}, statuses
    else:
        assert 400 in statuses, statuses

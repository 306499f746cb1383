"""The MemoryStore contract on DjangoMemoryStore's path through Django's connection (`native=False`,
what a host gets with `MEMORY_STORE_NATIVE_ASYNC` off): inside the test's transaction, so fast.
The default native path runs the same contract in test_store_native.py."""

import pytest

from memoryadmin.facts.store import DjangoMemoryStore

from .store_contract import MemoryStoreContract

pytestmark = [pytest.mark.django_db]


class TestDjangoMemoryStoreOnDjangosConnection(MemoryStoreContract):
    @pytest.fixture
    def store(self):
        return DjangoMemoryStore(session_id="sess-1234", native=False)

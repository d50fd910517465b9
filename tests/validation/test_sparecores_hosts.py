"""Spare Cores' servers' host CPUs as host_speed (validation/sparecores_hosts.py): PassMark single-thread ratings
over the reference hosts' (Sapphire Rapids and Zen 3 servers of the same data), entered for every row of the
source in validation/conditions_read_after.yaml. Ratios worked by hand from the ratings the script cites."""

import pytest

from planner.validation.measured import conditions_read_after
from tests.fixtures.validation_scripts import load_script

hosts = load_script("sparecores_hosts")


def test_the_reference_is_the_mean_of_the_sapphire_rapids_and_zen3_families():
    """(2,801.6 + 2,720.1 + 3,154.0 + 3,134.0) / 4 = 2,952.4 and (2,276.0 + 2,505.1 + 2,511.1) / 3 = 2,430.7:
    their mean 2,691.6."""
    assert hosts.reference_rating() == pytest.approx(2691.58, abs=0.01)


def test_cascade_lake_and_sapphire_rapids_hosts_by_hand():
    """GCP's 2.2 GHz Cascade Lake (a2, g2): 1,697.8 / 2,691.6 = 0.631; Vultr's Xeon Gold 6448H: 3,317.3 / 2,691.6 =
    1.232; AWS g5's EPYC 7R32 (Zen 2): 2,135.4 / 2,691.6 = 0.793."""
    assert hosts.host_speed("gcp/a2-highgpu-1g") == 0.63
    assert hosts.host_speed("vultr/vcg-l40s-16c-180g-48vram") == 1.23
    assert hosts.host_speed("aws/g5.16xlarge") == 0.79


def test_every_row_of_the_source_carries_its_servers_speed_read_after():
    servers = hosts.row_servers()
    after = conditions_read_after()
    assert len(servers) == 454
    assert all(after[rid]["host_speed"] == hosts.host_speed(server) for rid, server in servers.items())

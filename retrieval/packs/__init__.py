"""Knowledge packs: cards (PACK.md), the registry (REGISTRY.md), routing a question to at most two packs, and the shelf that adds, updates and removes packs."""

from retrieval.packs.card import CARD_FILE, PackCard, parse_card, read_card
from retrieval.packs.registry import REGISTRY_FILE, Registry, RegistryRow
from retrieval.packs.routing import (
    MAX_PACKS,
    NO_BASIS,
    PackChoice,
    Routing,
    RoutingRules,
    next_pack,
    route,
)
from retrieval.packs.shelf import PackInfo, PackReport, PackShelf, pack_label

__all__ = [
    "CARD_FILE", "MAX_PACKS", "NO_BASIS", "REGISTRY_FILE", "PackCard", "PackChoice", "PackInfo", "PackReport",
    "PackShelf", "Registry", "RegistryRow", "Routing", "RoutingRules", "next_pack", "pack_label", "parse_card",
    "read_card", "route",
]

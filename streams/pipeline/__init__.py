"""The stage framework: what every stage shares (decode, ledger, outputs, dead letters) and the
thin Faust wiring. Knows Kafka, no outside service."""

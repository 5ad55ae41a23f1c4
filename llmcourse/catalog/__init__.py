"""The catalog: models, GPUs, links, costs and hardware prices, each row with its source (``llmcourse/data``).

A name given as text is looked up with "did you mean" on a typo; :func:`~llmcourse.catalog.params.count_params`
counts a model's parameters from its Hugging Face config.
"""

from llmcourse.catalog.catalog import (
    GPU,
    PRECISIONS,
    Catalog,
    Cost,
    HardwarePrice,
    Link,
    Model,
    bytes_per_value,
    costs,
    gpus,
    hardware_prices,
    links,
    models,
)

__all__ = [
    "GPU",
    "PRECISIONS",
    "Catalog",
    "Cost",
    "HardwarePrice",
    "Link",
    "Model",
    "bytes_per_value",
    "costs",
    "gpus",
    "hardware_prices",
    "links",
    "models",
]

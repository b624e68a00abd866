"""Model families: thin mappers from a checkpoint's config and tensor names
onto train.models.transformer (or train.models.gpt for GPT-2). Each module
meets train.models.protocol.Family; train.models.registry lists them."""

"""What a host keeps between calls, in memory only, beside the store: its turns' lookups
(:mod:`~memory_es.host.turns`, G34, G35, G30) and the automatic lines a retained provider
session was served (:mod:`~memory_es.host.receipts`, M10-M12). Neither is journalled.
"""

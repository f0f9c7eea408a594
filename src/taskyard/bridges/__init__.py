"""Bridges to systems users already run: taskyard's events on RabbitMQ topic exchanges
(``taskyard publisher``, seed 004) and jobs run by Celery workers (``taskyard
celery-pool``, seed 002). Each needs its optional extra: ``taskyard[amqp]``,
``taskyard[celery]``. See docs/integrations/."""

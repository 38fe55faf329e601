"""Package data of pygbn (the English stop-word list used by :mod:`pygbn.text`)."""

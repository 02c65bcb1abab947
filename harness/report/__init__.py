"""What a campaign writes: the JSON document, the HTML report, redaction, and where files land."""

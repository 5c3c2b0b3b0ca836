"""The output layer: images and packs with provenance (``export``) and the URL state of a share link
(``share``). Renders what the analyses computed; computes no analysis itself."""

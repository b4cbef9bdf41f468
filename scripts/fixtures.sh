#!/usr/bin/env bash
# Rebuilds the document fixtures in testdata/documents from guide.md:
# guide.docx and guide.epub with pandoc, the PDFs with the extract tests'
# own writer (encrypted.pdf then encrypted with qpdf, AES-256 with a user
# password; owner-*.pdf, the guide with only an owner password, by qpdf).
#   apt-get install pandoc qpdf
set -euo pipefail
cd "$(dirname "$0")/../testdata/documents"
pandoc guide.md -o guide.docx
pandoc guide.md --epub-chapter-level=1 -o guide.epub
cd ../..
go test ./internal/extract -run TestFixtures -update-documents

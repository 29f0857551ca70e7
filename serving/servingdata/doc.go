// Package servingdata embeds a real LLM inference trace, so that examples,
// tests and a user's first runs have demand data in a fresh clone: the
// conversation service of the Azure LLM inference trace 2023 (19,366
// requests, 2023-11-16 18:15–19:14, prompt and generated tokens per
// request), gzip-compressed (gzip -9 -n) and otherwise byte-identical to
// data/AzureLLMInferenceTrace_conv.csv of github.com/Azure/AzurePublicDataset
// at commit b469a113cedca53ddc3bdea71a143dc4b7d8700c (sha256 of the
// uncompressed file: 2f1e5b666d4e3055fdbba98598ce2ec307767b9064e03e2fa46676dbcc7d0bf8).
//
// Licence: Creative Commons Attribution 4.0 International (CC BY 4.0).
// Attribution: P. Patel, E. Choukse, C. Zhang, A. Shah, Í. Goiri,
// S. Maleki, R. Bianchini, "Splitwise: Efficient generative LLM inference
// using phase splitting", ISCA 2024; data from Azure LLM inference
// services (see NOTICE).
package servingdata

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"fmt"

	"github.com/goodsched/goodsched/serving"
)

//go:embed AzureLLMInferenceTrace_conv.csv.gz
var conversationGz []byte

// Conversation returns the embedded Azure conversation trace.
func Conversation() (serving.Trace, error) {
	zr, err := gzip.NewReader(bytes.NewReader(conversationGz))
	if err != nil {
		return serving.Trace{}, fmt.Errorf("servingdata: %w", err)
	}
	defer zr.Close()
	return serving.ReadAzureTrace(zr)
}

package embed

// maxStopWordLen is the length in runes of the longest stop word.
const maxStopWordLen = 10

// stopWords holds the FNV-1a rune hashes of common English function words,
// which Lexical drops unless LexicalOptions.KeepStopWords is set. Hashes
// rather than strings keep the lookup allocation-free; 64-bit collisions
// with real words are negligible.
var stopWords = func() map[uint64]bool {
	m := make(map[uint64]bool, len(stopWordList))
	for _, w := range stopWordList {
		m[hashRunes(fnvOffset, []rune(w))] = true
	}
	return m
}()

// stopWordList is the source of stopWords; every entry is lower case and at
// most maxStopWordLen runes long.
var stopWordList = []string{
	"a", "about", "above", "after", "again", "against", "all", "also", "am", "an", "and",
	"any", "are", "as", "at", "be", "because", "been", "before", "being", "below",
	"between", "both", "but", "by", "can", "could", "did", "do", "does", "doing", "down",
	"during", "each", "either", "few", "for", "from", "further", "had", "has", "have",
	"having", "he", "her", "here", "hers", "herself", "him", "himself", "his", "how",
	"however", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "may", "me",
	"might", "more", "most", "must", "my", "myself", "neither", "no", "nor", "not", "now",
	"of", "off", "on", "once", "only", "or", "other", "our", "ours", "ourselves", "out",
	"over", "own", "same", "shall", "she", "should", "so", "some", "such", "than", "that",
	"the", "their", "theirs", "them", "themselves", "then", "there", "therefore", "these",
	"they", "this", "those", "through", "thus", "to", "too", "under", "until", "up",
	"upon", "us", "very", "was", "we", "were", "what", "when", "where", "whether",
	"which", "while", "who", "whom", "whose", "why", "will", "with", "within", "would",
	"yet", "you", "your", "yours", "yourself", "yourselves",
	// pieces of contractions split at the apostrophe
	"s", "t", "d", "ll", "re", "ve", "m", "don", "doesn", "didn", "isn", "aren", "wasn",
	"weren", "won", "wouldn", "couldn", "shouldn", "hasn", "haven", "hadn",
}

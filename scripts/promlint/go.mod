module flock-promlint

go 1.21

require (
	github.com/prometheus/client_golang v1.20.5
	github.com/prometheus/common v0.62.0
)

require (
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/client_model v0.6.1 // indirect
	google.golang.org/protobuf v1.36.1 // indirect
)

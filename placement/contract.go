package placement

// Assignment is the set of concrete devices (accel.Device.ID) serving a job.
type Assignment struct {
	Job     string   `json:"job"`
	Devices []string `json:"devices"`
}
